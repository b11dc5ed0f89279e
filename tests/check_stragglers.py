#!/usr/bin/env python3
"""Checks the ranks and stragglers of a merged summary (`tracefuse merge --format json`, schema
in include/tracefuse/report/merge.h) against what tracefuse-gen planted (--expect-ranks): on the
SLOW_PLATFORM side exactly one straggler, the slow rank's pair, whose others' wait is the sum of
the other ranks' planted waits and whose computation is the planted one; on the other side
none; and every rank's wait is the planted one.

    check_stragglers.py SUMMARY_JSON SLOW_PLATFORM EXPECTED_SLOW.json EXPECTED_OTHER.json

Pairs are labelled rank<N> (`tracefuse pairs`). Exits 0, or 1 after one
`check_stragglers: FAIL: ...` line per difference.
"""
import json
import sys

# The traces give microseconds with three decimals, and merge rounds its sums to the same.
TOLERANCE_US = 0.0015


def close(a, b):
    return abs(a - b) <= TOLERANCE_US


def check(summary, slow_platform, expected):
    failures = []
    sides = summary["sides"]
    if slow_platform not in sides:
        return [f"no {slow_platform} side in {sides}"]
    slow_side = sides.index(slow_platform)
    for side, name in enumerate(sides):
        planted = expected[side == slow_side]
        ranks = {p["pair"]: p for p in summary["ranks"][side]["pairs"]}
        if sorted(ranks) != sorted(f"rank{r['rank']}" for r in planted["ranks"]):
            failures.append(f"{name}: ranks {sorted(ranks)}")
            continue
        for r in planted["ranks"]:
            got = ranks[f"rank{r['rank']}"]
            if not close(got["wait_us"], r["wait_us"]):
                failures.append(f"{name}: rank{r['rank']} waited {got['wait_us']} us, "
                                f"planted {r['wait_us']}")
            if not close(got["computation_us"], r["computation_us"]):
                failures.append(f"{name}: rank{r['rank']} computed {got['computation_us']} us, "
                                f"planted {r['computation_us']}")
            if got["collectives"] != planted["collectives_per_rank"]:
                failures.append(f"{name}: rank{r['rank']}: {got['collectives']} collectives "
                                f"matched, planted {planted['collectives_per_rank']}")
    stragglers = summary["stragglers"]
    slow = expected[True]
    want_pair = f"rank{slow['slow_rank']}"
    on_slow = [s for s in stragglers if s["side"] == f"trace{slow_side + 1}"]
    on_other = [s for s in stragglers if s["side"] != f"trace{slow_side + 1}"]
    if on_other:
        failures.append(f"stragglers on the side without a slow rank: {on_other}")
    if [s["pair"] for s in on_slow] != [want_pair]:
        failures.append(f"{slow_platform} stragglers {[s['pair'] for s in on_slow]}, "
                        f"not [{want_pair}]")
    else:
        s = on_slow[0]
        others = sum(r["wait_us"] for r in slow["ranks"] if r["rank"] != slow["slow_rank"])
        if not close(s["others_wait_us"], others):
            failures.append(f"the others waited {s['others_wait_us']} us, planted {others}")
        if s["other_ranks"] != slow["world_size"] - 1:
            failures.append(f"other_ranks {s['other_ranks']}")
    return failures


def main():
    path, slow_platform, slow_path, other_path = sys.argv[1:5]
    try:
        with open(path) as f:
            summary = json.load(f)
        with open(slow_path) as f, open(other_path) as g:
            expected = {True: json.load(f), False: json.load(g)}
    except (OSError, ValueError) as e:
        print(f"check_stragglers: FAIL: {e}", file=sys.stderr)
        return 1
    failures = check(summary, slow_platform, expected)
    for failure in failures:
        print(f"check_stragglers: FAIL: {path}: {failure}", file=sys.stderr)
    if not failures:
        s = summary["stragglers"][0]
        print(f"check_stragglers: {s['pair']} on the {slow_platform} side, the others waited "
              f"{s['others_wait_us']} us for it, as planted")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
