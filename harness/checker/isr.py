"""ISR behaviour: acks=all acknowledged below min.insync.replicas, unclean elections."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from itertools import accumulate

from harness.checker.config import RunConfig
from harness.checker.facts import Facts
from harness.checker.model import CheckOutcome


def check_isr(facts: Facts, config: RunConfig) -> CheckOutcome:
    """acked-below-min-isr: an acks=all send acknowledged although every observation of its
    partition, from the last one before its invoke to the first one after its completion,
    showed fewer in-sync replicas than min.insync.replicas.
    unclean-election (only where unclean leader election is disabled): a new leader in
    neither the last observed ISR nor the last observed ELR."""
    out = CheckOutcome("isr")
    # per partition with at least one below-min observation: prefix counts of good ones
    good_prefix: dict[int, list[int]] = {}
    for tp, obs in enumerate(facts.observations):
        override = config.min_insync_for(facts.tps[tp][0])
        good = []
        any_bad = False
        for size, reported in zip(obs.isr_size, obs.min_insync, strict=True):
            need = override if override is not None else reported
            bad = need is not None and need >= 0 and size < need
            any_bad |= bad
            good.append(0 if bad else 1)
        if any_bad:
            good_prefix[tp] = [0, *accumulate(good)]
    below = 0
    default_all = 1 if config.acks_all else 0
    for tp, prefix in good_prefix.items():
        obs = facts.observations[tp]
        idx = list(obs.index)
        n = len(idx)
        vids = facts.acked_vid[tp]  # in completion order
        comp_of = facts.comp_index.__getitem__
        for i, j in _bad_runs(prefix):
            # sends whose first observation after completion lies in the run i..j
            lo_comp = idx[i - 1] if i > 0 else -1
            first = bisect_left(vids, lo_comp, key=comp_of)
            last = bisect_left(vids, idx[j], key=comp_of) if j < n - 1 else len(vids)
            for k in range(first, last):
                vid = vids[k]
                acks = facts.acks_all[vid]
                if (acks if acks >= 0 else default_all) != 1:
                    continue
                inv = facts.inv_index[vid]
                lo = max(bisect_left(idx, inv) - 1, 0)
                if lo < i:
                    continue
                comp = comp_of(vid)
                hi = min(bisect_right(idx, comp), n - 1)
                below += 1
                window = list(range(lo, hi + 1))
                ex = {
                    "value": facts.value_list[vid],
                    **facts.where(tp, facts.ack_off[vid]),
                    "isr_sizes": [obs.isr_size[w] for w in window[:10]],
                    "min_insync": _need(config, facts, tp, obs.min_insync[lo]),
                    "index": [inv, comp, *(obs.index[w] for w in window[:10])],
                }
                out.anomaly("acked-below-min-isr").add(ex)
    allowed = 0
    for ch in facts.leader_changes:
        topic = facts.tps[ch.tp][0]
        if config.unclean_for(topic):
            allowed += 1
            continue
        ex = {
            **facts.where(ch.tp),
            "old_leader": ch.old_leader,
            "new_leader": ch.new_leader,
            "previous_isr": ch.previous_isr,
            "previous_elr": ch.previous_elr,
            "time_s": round(ch.time / 1e9, 3),
            "index": [ch.previous_index, ch.index],
        }
        out.anomaly("unclean-election").add(ex)
    out.stats = {
        "acked_below_min_isr": below,
        "unclean_elections_allowed": allowed,
        "partitions_below_min_isr_observed": len(good_prefix),
    }
    return out.settle()


def _bad_runs(prefix: list[int]) -> list[tuple[int, int]]:
    """Maximal runs i..j of below-min observations, from the prefix counts of good ones."""
    runs = []
    start = -1
    for i in range(len(prefix) - 1):
        bad = prefix[i + 1] == prefix[i]
        if bad and start < 0:
            start = i
        elif not bad and start >= 0:
            runs.append((start, i - 1))
            start = -1
    if start >= 0:
        runs.append((start, len(prefix) - 2))
    return runs


def _need(config: RunConfig, facts: Facts, tp: int, reported: int) -> int | None:
    override = config.min_insync_for(facts.tps[tp][0])
    if override is not None:
        return override
    return reported if reported >= 0 else None
