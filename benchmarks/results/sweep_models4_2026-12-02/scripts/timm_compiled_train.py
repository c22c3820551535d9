"""torch.compile (default mode) of a timm ViT training step on the CPU: 2 blocks at 32 px, AdamW, 10 steps;
forward and backward run as Inductor's C++ kernels."""
import torch
import timm

torch.manual_seed(0)
model = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32, patch_size=8, depth=2, num_classes=10)
cmodel = torch.compile(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x, y = torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,))
for step in range(10):
    loss = torch.nn.functional.cross_entropy(cmodel(x), y)
    loss.backward()
    opt.step(); opt.zero_grad()
print("steps", step + 1, "loss", float(loss))
