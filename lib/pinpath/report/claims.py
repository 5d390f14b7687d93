"""The 15 claims of the thread as data, each with the rule that turns a run's data into a
verdict. The thread's figures are quoted from it; measured figures are computed here from
the run's parquet files, never typed in (ReFrame keeps references apart from checks)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from ..units import fmt_nbytes, fmt_ns
from .tables import spread

__all__ = ["Claim", "CLAIMS", "Verdict", "evaluate", "judge", "load_run", "Missing"]


class Verdict:
    HOLDS = "holds"
    DOES_NOT_HOLD = "does not hold"
    NOT_APPLICABLE = "not applicable here"


class Missing(Exception):
    """A data file a rule needs is not in the run (its notebook failed or was not run)."""


@dataclass(frozen=True)
class Claim:
    id: str
    who: str
    text: str
    thread: str                      #: the thread's figure or statement
    notebook: str                    #: where it is measured
    rule: str                        #: the stated rule, in words
    judge: Callable[[dict, str], tuple[str, str, str]]   #: (data, platform) -> (measured, verdict, why)


def load_run(run_dir: Path) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """Every readable parquet file of a run by stem, and the names of those that are not."""
    data, bad = {}, []
    for p in sorted(Path(run_dir, "data").glob("*.parquet")):
        try:
            data[p.stem] = pd.read_parquet(p)
        except Exception:   # truncated or not parquet at all: the report names it
            bad.append(p.name)
    return data, bad


def _get(data: dict, name: str) -> pd.DataFrame:
    if name not in data:
        raise Missing(f"no data/{name}.parquet in this run")
    return data[name]


def _ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def _yes(cond: bool) -> str:
    return Verdict.HOLDS if cond else Verdict.DOES_NOT_HOLD


def _per_transfer_counts(tr: pd.DataFrame, calls: pd.DataFrame, policy: str) -> dict[str, float]:
    t = tr[(tr.event == "transfer") & (tr.policy == policy)]
    c = calls[calls.transfer_id.isin(t.transfer_id)]
    n = max(len(t), 1)
    return {k: float((c.category == k).sum()) / n for k in ("alloc", "grant", "free", "lock", "unlock", "query")}


# -- the rules ------------------------------------------------------------------------------
def _c1(data, platform):
    tr, calls = _get(data, "04_c1_offload_region"), _get(data, "04_c1_offload_region-calls")
    spc = _per_transfer_counts(tr, calls, "stage_per_copy")
    tracked = _per_transfer_counts(tr, calls, "nextgen_lock_mapped")
    needs_grant = (calls.category == "grant").any()
    ok = spc["alloc"] == 1 and spc["free"] == 1 and (spc["grant"] == 1 or not needs_grant) \
        and tracked["alloc"] == tracked["lock"] == 0
    measured = (f"stage_per_copy per transfer: alloc {spc['alloc']:.2f}, grant {spc['grant']:.2f}, "
                f"free {spc['free']:.2f}; nextgen_lock_mapped: alloc {tracked['alloc']:.2f}, lock {tracked['lock']:.2f}")
    why = ("every transfer of the already-mapped arrays allocates and frees a staging buffer under per-copy staging"
           + ("" if needs_grant else " (this runtime needs no grant call)") if ok else
           "per-copy staging did not allocate and free once per transfer")
    return measured, _yes(ok), why


def _c2(data, platform):
    t = _get(data, "02_c2_staging")
    t = t[t.event == "transfer"]
    small = t.nbytes.min()
    fresh = t[(t.policy == "stage_per_copy") & (t.nbytes == small)]
    share = float((fresh.alloc_ns + fresh.grant_ns + fresh.free_ns).median() / fresh.total_ns.median())
    med = t.groupby(["nbytes", "direction", "policy"]).total_ns.median().unstack("policy")
    speedup = med["stage_per_copy"] / med["stage_pooled"]
    ok = share >= 0.5 and bool((speedup > 1).all())
    measured = (f"at {fmt_nbytes(small)} allocate+grant+free is {100 * share:.0f} % of a per-copy transfer; "
                f"pooled is {speedup.min():.1f}x to {speedup.max():.1f}x faster")
    return measured, _yes(ok), ("allocation dominates small staged copies and reuse wins at every size" if ok else
                                "allocation is not the larger part, or reuse does not win everywhere")


def _c3(data, platform):
    t = _get(data, "05_c3_c5_lock_or_stage")
    t = t[t.event == "transfer"]
    med = t.groupby(["nbytes", "direction", "policy"]).total_ns.median().unstack("policy")
    r = med["lock_always"] / med["stage_per_copy"]
    faster = int((r < 1).sum())
    ok = faster > len(r) / 2
    measured = (f"lock_always / stage_per_copy time: {r.min():.2f} to {r.max():.2f} "
                f"(faster at {faster} of {len(r)} size-direction points)")
    return measured, _yes(ok), ("locking the user pointer beats staging at most sizes" if ok else
                                "staging is as fast or faster at most sizes")


def _c4(data, platform):
    lc = _get(data, "06_c4_query_vs_lock-cost")
    q = lc[(lc.op == "query") & (lc.state == "pageable")].groupby("nbytes").ns.median()
    lk = lc[(lc.op == "lock") & (lc.state == "pageable")].groupby("nbytes").ns.median()
    r = (q / lk).dropna()
    t = _get(data, "06_c4_query_vs_lock")
    t = t[(t.event == "transfer") & (t.kind == "pinned")]
    med = t.groupby(["nbytes", "policy"]).total_ns.median().unstack("policy")
    saved = (med["lock_always"] - med["query_then_lock"]).median()
    ok = bool((r < 1).all()) and saved > 0
    measured = (f"query / lock of pageable memory: {r.min():.3g} to {r.max():.3g}; on pinned memory "
                f"query_then_lock saves {fmt_ns(saved)} per transfer against lock_always")
    return measured, _yes(ok), ("the query is cheaper than the lock and skipping the lock pays" if ok else
                                "the query is not cheaper everywhere, or skipping the lock does not pay")


def _c5(data, platform):
    o = _get(data, "05_c3_c5_lock_or_stage-outcomes")
    refused = sorted(set(o[~o.granted.astype(bool)].kind))
    kinds = _get(data, "05_c3_c5_lock_or_stage-kinds")
    fell_back = sorted(set(kinds[kinds.path == "lock_failed_staged"].kind))
    ro_refused = "read_only" in refused
    measured = (f"locks refused for: {', '.join(refused) or 'no kind'}; lock_always fell back to staging for: "
                f"{', '.join(fell_back) or 'no kind'}")
    if ro_refused and "read_only" in fell_back:
        return measured, Verdict.HOLDS, "read-only memory cannot be locked here and the fallback carried the copy"
    ro = o[o.kind == "read_only"]
    call = f" ({ro.call.iloc[0]})" if len(ro) else ""
    others = f"; the fallback was needed for {', '.join(refused)} instead" if refused else ""
    return measured, Verdict.DOES_NOT_HOLD, (f"this runtime granted the lock of read-only memory{call}: no fallback "
                                             f"was needed for it{others}")


def _lock_median(lc, op, state):
    return lc[(lc.op == op) & (lc.state == state)].groupby("nbytes").ns.median()


def _c6(data, platform):
    lc = _get(data, "03_c6_c7_c9_lock_cost")
    r = (_lock_median(lc, "lock", "pageable") / _lock_median(lc, "query", "pageable")).dropna()
    ok = bool((r >= 10).all())
    measured = f"register / query: {r.min():.3g}x to {r.max():.3g}x over {len(r)} sizes"
    return measured, _yes(ok), ("registering costs at least 10x a pointer query at every size" if ok else
                                "registering is within 10x of a query at some size")


def _c7(data, platform):
    lc = _get(data, "03_c6_c7_c9_lock_cost")
    r = (_lock_median(lc, "relock", "locked") / _lock_median(lc, "query", "locked")).dropna()
    answers = sorted(set(lc[lc.op == "relock"].error) - {""})
    ok = bool((r <= 2).all())
    measured = (f"re-lock / query of locked memory: {r.min():.3g}x to {r.max():.3g}x"
                + (f"; the re-lock is refused: {', '.join(answers)}" if answers else "; the re-lock is granted"))
    return measured, _yes(ok), ("a re-lock costs about what a query costs (within 2x)" if ok else
                                "a re-lock costs more than twice a query")


def _c8(data, platform):
    s = _get(data, "07_c8_semantics")
    twice = s[s.probe == "lock_twice_unlock_once"]
    second = twice[twice.action == "lock A again"]
    still = twice[twice.action == "query A"].locked
    counts = len(second) and second.error.iloc[0] == "" and len(still) and bool(still.iloc[0])
    answer = ("second lock " + ("granted" if len(second) and second.error.iloc[0] == "" else
                                f"refused ({second.error.iloc[0]})" if len(second) else "not reached")
              + ("; still locked after one unlock" if len(still) and bool(still.iloc[0]) else
                 "; not locked after one unlock" if len(still) else ""))
    if platform != "hsa":
        return answer, Verdict.NOT_APPLICABLE, (f"the claim is about HSA/ROCT's registration count; {platform} "
                                                f"{'counts' if counts else 'does not count'} locks")
    return answer, _yes(bool(counts)), "HSA counted the two locks" if counts else "HSA did not count the locks"


def _c9(data, platform):
    lc = _get(data, "03_c6_c7_c9_lock_cost")
    cold, warm = _lock_median(lc, "lock", "pageable"), _lock_median(lc, "lock", "pinned")
    r = (cold / warm).dropna()
    ans = sorted(set(lc[(lc.op == "lock") & (lc.state == "pinned")].error) - {""})
    ok = bool((r >= 10).all())
    measured = (f"lock {spread(lc[(lc.op == 'lock') & (lc.state == 'pageable')].ns)} -> with prior pinning "
                f"{spread(lc[(lc.op == 'lock') & (lc.state == 'pinned')].ns)}"
                + (f" (answered {', '.join(ans)})" if ans else ""))
    return measured, _yes(ok), ("prior pinning makes the lock at least 10x cheaper at every size"
                                + (", because the runtime refuses it at once" if ans else "") if ok else
                                "prior pinning does not make the lock 10x cheaper everywhere")


def _c10(data, platform):
    st = _get(data, "08_c10_api_stats")
    lock = st[st.category == "lock"]
    by = lock.groupby("user_pinned").apply(lambda g: g.TotalDurationNs.sum() / max(g.Calls.sum(), 1),
                                           include_groups=False)
    if len(by) < 2:
        return "no lock calls in one of the runs", Verdict.NOT_APPLICABLE, "the replica made no lock calls to compare"
    without, with_ = float(by.loc[False]), float(by.loc[True])
    ok = with_ < without
    pinned = lock[lock.user_pinned.astype(bool)]
    refused = int(pinned.refused.sum()) if "refused" in pinned else 0
    measured = (f"average lock call {fmt_ns(without)} without user pinning, {fmt_ns(with_)} with"
                + (f" ({refused} of {int(pinned.Calls.sum())} refused)" if refused else ""))
    why = ("user pinning makes the runtime's lock calls cheaper, as in the thread's tables" if ok else
           "user pinning does not make the lock calls cheaper")
    if ok and refused:
        why += ", here because the runtime refuses a lock of memory the application already pinned"
    return measured, _yes(ok), why


def _c11(data, platform):
    hz = _get(data, "09_c11_hazard_limits")
    lost = int((hz.a_locked_after == False).sum())  # noqa: E712 (nullable)
    bad = int((hz.copy_verified == False).sum())    # noqa: E712
    lim = _get(data, "09_c11_hazard_limits-limits")
    refused = lim[~lim.granted.astype(bool)]
    measured = (f"A's shared page reported unlocked after the other thread's unlock in {lost} of {len(hz)} "
                f"iterations, {bad} copies wrong; past a {fmt_nbytes(int(lim.limit_nbytes.iloc[0]))} RLIMIT_MEMLOCK "
                f"{len(refused)} of {len(lim)} requests refused")
    ok = lost > 0 or bad > 0
    return measured, _yes(ok), ("another thread's unlock of a page-sharing range unpinned our range: "
                                "the lock must be held for the call" if ok else
                                "this runtime kept our range pinned when another range on its page was unlocked")


def _c12(data, platform):
    c = _get(data, "01_c12_lock_copy")
    m = c.groupby("case").inside_ns.median()
    r1, r3 = m["1_lock_copy"] / m["2_prelocked_copy"], m["3_relock_copy"] / m["2_prelocked_copy"]
    ok1, ok3 = r1 >= 100, abs(r3 - 1) <= 0.10
    measured = (f"case 1 = {r1:.2f}x case 2, case 3 = {r3:.2f}x case 2 "
                f"({fmt_nbytes(int(c.nbytes.iloc[0]))}: {fmt_ns(m['2_prelocked_copy'])} for case 2)")
    why = (f"(1) is {'' if ok1 else 'not '}orders of magnitude slower; (2) and (3) are "
           f"{'' if ok3 else 'not '}alike (within 10 %)")
    return measured, _yes(ok1 and ok3), why


def _c13(data, platform):
    t = _get(data, "10_c13_concurrency")
    pol = "lock_always" if "lock_always" in set(t.policy) else t.policy.iloc[0]
    med = t[t.policy == pol].groupby("threads").overhead_ns.median()
    lo, hi = med.index.min(), med.index.max()
    slope = np.polyfit(med.index.values.astype(float), med.values.astype(float), 1)[0] if len(med) > 1 else 0.0
    ok = med[hi] > med[lo] and med[hi] > 1600
    measured = (f"{pol}: runtime overhead per transfer {fmt_ns(med[lo])} with {lo} thread(s), {fmt_ns(med[hi])} "
                f"with {hi}; slope {fmt_ns(slope)} per added thread")
    return measured, _yes(bool(ok)), ("concurrent offload pushes the per-transfer runtime cost past 1.6 us" if ok else
                                      "the per-transfer cost does not grow past 1.6 us with threads")


def _c14(data, platform):
    t = _get(data, "11_c14_tracked_locking")
    t = t[t.event == "transfer"]
    med = t.groupby("policy").total_ns.median()
    locking = [p for p in ("lock_always", "query_then_lock", "nextgen", "nextgen_lock_mapped") if p in med]
    best = med[locking].idxmin()
    calls = _get(data, "11_c14_tracked_locking-calls")
    tracked = t[t.policy == "nextgen_lock_mapped"]
    locks = int(calls[calls.transfer_id.isin(tracked.transfer_id) & (calls.category == "lock")].shape[0])
    bw = data.get("11_c14_tracked_locking-copy")
    copy = ""
    if bw is not None and len(bw):
        big = bw[bw.nbytes == bw.nbytes.max()]
        a = big[big.case == "pinned"].gb_per_s.median()
        bare = big[big.case == "plain_loop"].gb_per_s.median()
        sync = big[big.case == "sync_loop"].gb_per_s.median()
        pageable = big[big.case == "pageable"].gb_per_s.median()
        copy = (f"; async pinned copy {a:.1f} GB/s at {fmt_nbytes(int(big.nbytes.iloc[0]))} "
                f"(bare native async loop {bare:.1f}, synchronous copy {sync:.1f}, pageable {pageable:.1f}")
        link = data.get("11_c14_tracked_locking-link")
        if link is not None and len(link) and link.peak_gb_per_s.notna().all():
            copy += f"; {100 * a / link.peak_gb_per_s.iloc[0]:.0f} % of the {link.link.iloc[0]} raw peak"
        copy += ")"
    ok = best == "nextgen_lock_mapped" and locks == 0
    measured = ("median per transfer: " + ", ".join(f"{p} {fmt_ns(med[p])}" for p in locking)
                + f"; tracked transfers made {locks} lock calls{copy}")
    why = ("tracking locked memory makes the mapped arrays' transfers the cheapest, with no lock per transfer"
           if ok else f"{best} was cheaper than the tracked policy")
    if platform != "hsa":
        why += "; the slow HSA async copy can only be judged on an AMD node"
    return measured, _yes(ok), why


def _c15(data, platform):
    o = _get(data, "12_c15_overlap")
    if "not_applicable" in o.columns:
        return "-", Verdict.NOT_APPLICABLE, str(o.not_applicable.iloc[0])
    m = o.groupby("queues").wall_ns.median()
    one, many = m[m.index.min()], m[m.index.max()]
    gain = 1 - many / one
    ok = gain >= 0.10
    measured = (f"{int(o.chains.iloc[0])} chains of {fmt_nbytes(int(o.nbytes.iloc[0]))}: {fmt_ns(one)} on one queue, "
                f"{fmt_ns(many)} on {m.index.max()} ({100 * gain:.0f} % less)")
    return measured, _yes(ok), ("spreading the chains over queues overlaps them" if ok else
                                "several queues did not shorten the run by 10 %")


CLAIMS: dict[str, Claim] = {c.id: c for c in (
    Claim("C1", "ye-luo", "Arrays already mapped with target enter data still show memory_pool_allocate, agents_allow_access and memory_pool_free per transfer.",
          "allocate / allow_access / free once per transfer (trace of one miniqmc region)", "04_c1_offload_region",
          "holds if stage_per_copy makes exactly one alloc and one free (and one grant where the runtime needs grants) per transfer of the mapped arrays while nextgen_lock_mapped makes none", _c1),
    Claim("C2", "JonChesterfield", "Data is staged to a fine-grain region allocated per memcpy; buffer reuse would be cheaper if allocation is expensive.",
          "'if memory_pool_allocate is expensive ... we should do some buffer reuse'", "02_c2_staging",
          "holds if allocate+grant+free is at least half of a per-copy transfer at the smallest size and pooled staging is faster at every size", _c2),
    Claim("C3", "JonChesterfield", "Lock the user pointer and copy from it: faster on the happy path.",
          "'things should now be faster on the happy path'", "05_c3_c5_lock_or_stage",
          "holds if lock_always is faster than stage_per_copy (median) at most size-direction points for heap memory", _c3),
    Claim("C4", "ye-luo", "Query the pointer (hsa_amd_pointer_info) to see whether it is pinned and skip staging.",
          "query instead of lock", "06_c4_query_vs_lock",
          "holds if a query of pageable memory is cheaper than its lock at every size and query_then_lock beats lock_always on pinned memory", _c4),
    Claim("C5", "JonChesterfield", "Unconditionally lock; if the lock fails, allocate + memcpy: needed for pointers into rodata and probably the host stack.",
          "locks of rodata (and maybe the stack) fail", "05_c3_c5_lock_or_stage",
          "holds if the lock of read-only memory is refused and lock_always then staged it; does not hold if it is granted", _c5),
    Claim("C6", "ye-luo", "On NVIDIA GPUs registering pinned memory is expensive while checking whether a pointer is pinned is cheap.",
          "register expensive, query cheap", "03_c6_c7_c9_lock_cost",
          "holds if the lock (register) of pageable memory costs at least 10x a query at every size", _c6),
    Claim("C7", "JonChesterfield", "Calling lock on already locked memory costs about the same check as a query.",
          "'roct has to do ~ the same check'", "03_c6_c7_c9_lock_cost",
          "holds if a re-lock of locked memory costs at most 2x a query of it at every size", _c7),
    Claim("C8", "ye-luo / JonChesterfield", "HSA refcounts locks (ROCT registration_count).",
          "fmm_register_memory / fmm_deregister_memory keep a registration count", "07_c8_semantics",
          "on HSA, holds if a second lock is granted and the memory stays locked after one unlock; elsewhere not applicable, with the runtime's answer", _c8),
    Claim("C9", "ye-luo", "Lock 35 us, unlock 7 us; with memory pinned by HIP beforehand lock 0.9 us, unlock 0.7 us.",
          "35 us -> 0.9 us (lock), 7 us -> 0.7 us (unlock)", "03_c6_c7_c9_lock_cost",
          "holds if the lock of memory pinned beforehand is at least 10x cheaper than the lock of pageable memory at every size", _c9),
    Claim("C10", "ye-luo", "rocprof: hsa_amd_memory_lock avg 84873 ns without user pinning, 51438 ns with.",
          "lock 803 calls avg 84873 ns -> 803 calls avg 51438 ns", "08_c10_api_stats",
          "holds if the average lock call in our trace of the replica (lock_always) is cheaper with user pinning than without", _c10),
    Claim("C11", "JonChesterfield", "The lock must be held for the call: another thread might unlock the same page meanwhile; locked memory is scarce.",
          "another thread's unlock of the same page", "09_c11_hazard_limits",
          "holds if, while a copy runs from A, another thread's unlock of B (sharing A's page) leaves A's page reported unlocked or the copy wrong", _c11),
    Claim("C12", "carlobertolli", "10^8 doubles: (1) lock + copy is slowest by orders of magnitude; (2) and (3) are alike.",
          "(1) 'slowest by several orders of magnitude'; (2) ~ (3)", "01_c12_lock_copy",
          "holds if case 1 takes at least 100x case 2 and case 3 is within 10 % of case 2", _c12),
    Claim("C13", "ye-luo", "With concurrent offload (QMCPACK) runtime costs go beyond the 1.6 us of re-lock + unlock.",
          "0.9 us + 0.7 us = 1.6 us with one thread", "10_c13_concurrency",
          "holds if lock_always's per-transfer runtime overhead at the most threads exceeds that at one thread and 1.6 us", _c13),
    Claim("C14", "ye-luo", "plugin-nextgen keeps track of locked memory (D142514); the HSA async copy remains very slow.",
          "tracked locked memory; slow async copy", "11_c14_tracked_locking",
          "holds if nextgen_lock_mapped has the lowest median time per transfer of the locking policies on the replica and its transfers make no lock calls", _c14),
    Claim("C15", "JonChesterfield", "The CUDA plugin overlaps tasks that the AMD plugin runs sequentially.",
          "overlap across streams", "12_c15_overlap",
          "holds if the chains spread over the most queues finish at least 10 % sooner than on one queue", _c15),
)}


def evaluate(run_dir: Path, platform: str, status: dict[str, dict] | None = None) -> tuple[pd.DataFrame, list[str]]:
    """One row per claim, and the data files that could not be read."""
    data, unreadable = load_run(run_dir)
    return judge(list(CLAIMS), data, platform, status), unreadable


def judge(ids, data: dict[str, pd.DataFrame], platform: str, status: dict[str, dict] | None = None) -> pd.DataFrame:
    """The claims ``ids`` judged on ``data`` (frames by name, as a run's data files are named)."""
    rows = []
    for c in (CLAIMS[i] for i in ids):
        try:
            measured, verdict, why = c.judge(data, platform)
        except Missing as e:
            st = (status or {}).get(c.notebook, {})
            reason = f"notebook {c.notebook} {st.get('status', 'did not run')}"
            if st.get("error"):
                reason += f": {st['error']}"
            measured, verdict, why = "-", Verdict.NOT_APPLICABLE, f"not measured: {reason} ({e})"
        except (KeyError, ValueError, IndexError, ZeroDivisionError) as e:
            measured, verdict, why = "-", Verdict.NOT_APPLICABLE, f"the data do not allow the rule: {type(e).__name__}: {e}"
        rows.append({"id": c.id, "who": c.who, "claim": c.text, "thread": c.thread, "measured": measured,
                     "platform": platform, "verdict": verdict, "why": why, "rule": c.rule, "notebook": c.notebook})
    return pd.DataFrame(rows)
