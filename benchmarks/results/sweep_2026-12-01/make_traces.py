import gzip, shutil, torch, torch.nn as nn
from torch.profiler import profile, ProfilerActivity, schedule, tensorboard_trace_handler, record_function
D = "/tmp/sweep/traces"
m = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 64), nn.LayerNorm(64))
x = torch.randn(16, 64)
def run(n=3):
    for _ in range(n): m(x).sum()
def save(name, **kw):
    with profile(activities=[ProfilerActivity.CPU], **kw) as p:
        run()
    p.export_chrome_trace(f"{D}/{name}.json")
save("noshapes", record_shapes=False)
save("stack", record_shapes=True, with_stack=True)
save("memory", record_shapes=True, profile_memory=True)
save("flops", record_shapes=True, with_flops=True, with_modules=True)
save("expcfg", record_shapes=True, experimental_config=torch._C._profiler._ExperimentalConfig(verbose=True))
# gzip
shutil.copy(f"{D}/stack.json", f"{D}/stack_copy.json")
with open(f"{D}/stack.json", "rb") as f, gzip.open(f"{D}/stack_gz.json.gz", "wb") as g: g.write(f.read())
# schedule with repeats, export each cycle
n = [0]
def handler(p):
    n[0] += 1; p.export_chrome_trace(f"{D}/sched_{n[0]}.json")
with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
             schedule=schedule(wait=1, warmup=1, active=3, repeat=2), on_trace_ready=handler) as p:
    for _ in range(12):
        with record_function("## step ##"):
            run(1)
        p.step()
with profile(activities=[ProfilerActivity.CPU], record_shapes=True, schedule=schedule(wait=0, warmup=1, active=2),
             on_trace_ready=tensorboard_trace_handler(f"{D}/tb", use_gzip=True)) as p:
    for _ in range(4):
        run(1); p.step()
# backward + optimizer
opt = torch.optim.SGD(m.parameters(), lr=0.1)
with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as p:
    for _ in range(2):
        m(x).sum().backward(); opt.step(); opt.zero_grad()
p.export_chrome_trace(f"{D}/train.json")
# bf16 autocast
with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as p:
    with torch.autocast("cpu", dtype=torch.bfloat16):
        run()
p.export_chrome_trace(f"{D}/autocast.json")
# empty profile
with profile(activities=[ProfilerActivity.CPU]) as p:
    pass
p.export_chrome_trace(f"{D}/empty_profile.json")
# record_function only, no ops
with profile(activities=[ProfilerActivity.CPU]) as p:
    with record_function("nothing"): sum(range(1000))
p.export_chrome_trace(f"{D}/only_annotation.json")
print("done")
