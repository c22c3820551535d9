"""diffusers denoising loop: the sweep's small UNet2DConditionModel under a DDIMScheduler, classifier-free guidance
(the latent doubled, the prediction split and mixed), 8 steps per image, then the small AutoencoderKL's decode;
3 images, under inference_mode. No optimizer: roofline's steps are the UNet's forwards."""
import sys, torch
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import sweep_models4 as sw
from diffusers import DDIMScheduler

unet, _ = sw.df_unet()
vae = sw.df_vae()[0].vae.eval()
sched = DDIMScheduler(num_train_timesteps=1000, beta_schedule="scaled_linear")
text = torch.randn(2, 8, 32)  # [unconditional, conditional] states
with torch.inference_mode():
    for image in range(3):
        sched.set_timesteps(8)
        lat = torch.randn(1, 4, 16, 16) * sched.init_noise_sigma
        for t in sched.timesteps:
            x = sched.scale_model_input(torch.cat([lat] * 2), t)
            eps_u, eps_c = unet(x, t, encoder_hidden_states=text, return_dict=False)[0].chunk(2)
            lat = sched.step(eps_u + 7.5 * (eps_c - eps_u), t, lat).prev_sample
        img = vae.decode(lat / vae.config.scaling_factor).sample
print("images", image + 1, tuple(img.shape), float(img.abs().mean()))
