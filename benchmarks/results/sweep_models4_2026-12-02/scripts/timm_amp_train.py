"""timm training loop with AMP bf16 on the CPU: ConvNeXt-V2 atto, timm's Mixup + SoftTargetCrossEntropy,
create_optimizer_v2 (AdamW, no weight decay on norms/biases), a cosine LR schedule stepped per update;
torch.autocast("cpu", bfloat16) around forward and loss; 10 steps of batch 8 at 64 px."""
import torch
import timm
from timm.data import Mixup
from timm.loss import SoftTargetCrossEntropy
from timm.optim import create_optimizer_v2
from timm.scheduler import CosineLRScheduler

torch.manual_seed(0)
model = timm.create_model("convnextv2_atto", pretrained=False, num_classes=10)
opt = create_optimizer_v2(model, opt="adamw", lr=1e-3, weight_decay=0.05)
sched = CosineLRScheduler(opt, t_initial=10, warmup_t=2, warmup_lr_init=1e-5)
mix = Mixup(mixup_alpha=0.8, cutmix_alpha=1.0, label_smoothing=0.1, num_classes=10)
crit = SoftTargetCrossEntropy()
x, y = torch.randn(8, 3, 64, 64), torch.randint(0, 10, (8,))
model.train()
for step in range(10):
    xb, yb = mix(x.clone(), y.clone())
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = crit(model(xb), yb)
    loss.backward()
    opt.step(); opt.zero_grad(set_to_none=True)
    sched.step_update(step + 1)
print("steps", step + 1, "loss", float(loss))
