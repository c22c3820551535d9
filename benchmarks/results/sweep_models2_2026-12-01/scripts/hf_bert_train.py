"""Tiny HF BERT for sequence classification with token_type_ids, trained 8 steps with AdamW + linear schedule."""
import torch, transformers as tf
torch.manual_seed(0)
cfg = tf.BertConfig(vocab_size=500, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)
m = tf.BertForSequenceClassification(cfg)
opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
sched = tf.get_linear_schedule_with_warmup(opt, 2, 8)
ids = torch.randint(0, 500, (4, 16)); tt = torch.zeros_like(ids); tt[:, 8:] = 1
for step in range(8):
    out = m(input_ids=ids, token_type_ids=tt, attention_mask=torch.ones_like(ids), labels=torch.tensor([0, 1, 0, 1]))
    out.loss.backward(); opt.step(); sched.step(); opt.zero_grad()
print("steps", step + 1)
