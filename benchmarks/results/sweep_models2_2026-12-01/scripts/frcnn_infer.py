"""fasterrcnn_mobilenet_v3_large_320_fpn (random weights) in eval, images of two sizes: 10 forwards."""
import torch
from torchvision.models.detection import fasterrcnn_mobilenet_v3_large_320_fpn
m = fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None, num_classes=5, min_size=160, max_size=160).eval()
imgs = [torch.rand(3, 160, 160), torch.rand(3, 120, 160)]
with torch.no_grad():
    for i in range(10): out = m(imgs)
print("forwards", i + 1, [len(o["boxes"]) for o in out])
