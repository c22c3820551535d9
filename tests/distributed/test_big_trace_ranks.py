"""The synthetic rank jobs of benchmarks/big_trace.py: its straggler must be the one the merge finds, on the
small fixture and on the llama training fixture whose steps are ten times longer (the sleep scales with the step)."""

from benchmark_scripts import load_benchmark

from roofline.distributed.merge import merge_trace_files


def test_the_benchmark_rank_jobs_name_rank_3_the_straggler(tmp_path):
    big_trace = load_benchmark("big_trace")
    for fixture, ranks in ((big_trace.RANK_FIXTURE, 5), (big_trace.FIXTURE, 4)):
        paths = big_trace.build_rank_job(tmp_path / fixture.name, ranks, fixture=fixture)
        merged = merge_trace_files(paths, jobs=2)
        assert [s.rank for s in merged.distributed.stragglers] == [3], fixture.name
        assert merged.environment.world_size == ranks
        digest = big_trace._merged_digest(merged.to_dict())
        assert digest["exposed_communication_s"][3] < min(digest["exposed_communication_s"][:3]), fixture.name
