import torch, os
here = os.path.dirname(os.path.abspath(__file__))
assert __name__ == "__main__", __name__
m = torch.nn.Conv2d(3, 8, 3)
for i in range(10):
    m(torch.randn(2, 3, 32, 32))
print("file", __file__)
