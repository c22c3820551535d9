"""Static int8 quantized (x86/fbgemm) conv net in an inference loop: 10 forwards."""
import torch, torch.nn as nn, torch.ao.quantization as q
torch.backends.quantized.engine = "x86" if "x86" in torch.backends.quantized.supported_engines else "fbgemm"
class M(nn.Module):
    def __init__(s):
        super().__init__(); s.q = q.QuantStub(); s.c = nn.Conv2d(3, 16, 3); s.r = nn.ReLU()
        s.p = nn.AdaptiveAvgPool2d(1); s.f = nn.Flatten(); s.l = nn.Linear(16, 10); s.dq = q.DeQuantStub()
    def forward(s, x): return s.dq(s.l(s.f(s.p(s.r(s.c(s.q(x)))))))
m = M().eval(); m.qconfig = q.get_default_qconfig(torch.backends.quantized.engine)
q.fuse_modules(m, [["c", "r"]], inplace=True); q.prepare(m, inplace=True)
for _ in range(4): m(torch.randn(2, 3, 32, 32))
q.convert(m, inplace=True)
x = torch.randn(4, 3, 32, 32)
for i in range(10): y = m(x)
print("forwards", i + 1)
