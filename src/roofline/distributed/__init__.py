"""Distributed profiling: each rank of a torchrun job profiled into one run directory, then merged.

    roofline profile --nproc 2 train.py -o RUN_DIR     # RUN_DIR/rank{r}/report.json + trace.json.gz, merged
    roofline merge RUN_DIR                             # RUN_DIR/report.json: ranks side by side

``rank`` (who am I, where do my files go), ``launch`` (torchrun), ``comm`` (communication vs compute on one
rank's trace, collectives, stragglers), ``merge`` (one Report of the job), ``collectives`` (bus bandwidth
ceilings measured with torch.distributed).
"""
