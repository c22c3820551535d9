import torch, threading
m = torch.nn.Linear(64, 64)
def work():
    for _ in range(20): m(torch.randn(8, 64))
ts = [threading.Thread(target=work) for _ in range(2)]
[t.start() for t in ts]; [t.join() for t in ts]
