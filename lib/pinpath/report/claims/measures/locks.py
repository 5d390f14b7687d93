"""The tests of the claims about locking, querying and unlocking host memory (C4 to C10)."""

from __future__ import annotations

import pandas as pd

from ....stats import Estimate, ratio_ci
from ....units import binary_size, fmt_ns
from ..load import _get, _rep, judged_rows
from ..model import Missing, Result
from ..verdict import _fmt_est
from .common import (COUNTED, GRANTED, REFUSED, _answer, _calls, _exact, _mechanism, _no_relock, _per_size,
                     _policy_ratio, _refused_all, _transfers)


def _c4_cost(data):
    return _per_size(data, ("query", "pageable"), ("lock", "pageable"), dataset="query_cost")


def _c4_saving(data):
    """On memory the application pinned, checking first against always locking (which, on a
    runtime that refuses a second lock, pays the refusal and then copies directly)."""
    t = _transfers(data, "query_saving")
    if "app_pinned" not in t:
        raise Missing("query_saving has no app_pinned column")
    pinned = t[t.app_pinned.astype(bool)]
    groups, facts = _policy_ratio(pinned, "query_then_lock", "lock_always")
    la = pinned[pinned.policy == "lock_always"]
    paths = ", ".join(f"{p} {n}" for p, n in la.path.value_counts().items())
    staged, _ = _policy_ratio(pinned, "query_then_lock", "stage_per_copy")
    detail = (f"on memory the application pinned: query_then_lock / lock_always (lock_always's paths: {paths or 'none'}); "
              "for information, query_then_lock / stage_per_copy " + ", ".join(f"{g} {_fmt_est(e, 'x')}" for g, e in staged[:4]))
    return Result(groups, detail, facts=facts)


_READ_ONLY = ("read_only", "read_only_file", "rodata")


def _c5(data):
    """The claim names rodata: is a lock of rodata refused with the runtime's default flags?"""
    o = _get(data, "lock_outcomes")
    o = o[(o.read_only_flag == False) | o.read_only_flag.isna()] if "read_only_flag" in o else o   # noqa: E712
    ro = o[(o.kind == "rodata") & (o.not_available == "")]
    if not len(ro):
        raise Missing("no rodata buffer could be made")
    refused = not ro.granted.astype(bool).all()
    kinds = o[o.not_available == ""]
    no = sorted(set(kinds[~kinds.granted.astype(bool)].kind))
    paths = data.get("kind_paths")
    fell = sorted(set(judged_rows(paths)[(judged_rows(paths).path == "lock_failed_staged")].kind)) \
        if paths is not None and len(paths) else []
    stack = o[o.kind == "stack"]
    detail = (f"refused with the runtime's default flags: {', '.join(no) or 'none'}; lock_always staged instead: "
              f"{', '.join(fell) or 'none'}; the host stack: "
              + ("granted" if len(stack) and stack.granted.astype(bool).all() else "refused" if len(stack) else "not measured"))
    if "pinned" in no:
        detail += "; memory from the pinned allocator is refused too, so an always-locking runtime stages it"
    flag = data.get("lock_outcomes_read_only_flag")
    if flag is not None and len(flag):
        f = flag[flag.kind.isin(_READ_ONLY) & flag.read_only_flag.astype(bool)]
        if len(f):
            detail += (f"; with the read-only flag (no offload runtime passes it): refused "
                       f"{', '.join(sorted(set(f[~f.granted.astype(bool)].kind))) or 'none'}")
    answer = _answer(ro[~ro.granted.astype(bool)]) if refused else "granted"
    fact = (f"a lock of rodata is {'refused (' + answer + ')' if refused else 'granted'}; the host stack's is "
            + ("granted" if len(stack) and stack.granted.astype(bool).all() else "refused" if len(stack) else "untested"))
    return Result([("rodata", _exact(1.0 if refused else 0.0, len(ro)))], detail, facts={"": fact})


def _c6(data):
    return _per_size(data, ("lock", "pageable"), ("query", "pageable"))


def _path_ns(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """A path of several calls (a re-lock and its unlock): per repeat, the sum of each call's median
    in that repeat; without repeat labels, one value (the sum of the medians: a single repeat)."""
    if all("repeat" in p for p in parts):
        total = sum(p.groupby("repeat").ns.median() for p in parts).dropna()
        return pd.DataFrame({"ns": total.to_numpy(dtype=float), "repeat": total.index.to_numpy()})
    return pd.DataFrame({"ns": [float(sum(p.ns.median() for p in parts))]})


def _relock_vs_query(data, relock_op: str, unlock_op: str, words: str, refused: str = "") -> Result:
    """(re-lock + its unlock) / query of locked memory per size, the re-lock being ``relock_op``."""
    relock, src = _calls(data, relock_op, "locked")
    unlock, _ = _calls(data, unlock_op, "locked")
    query, _ = _calls(data, "query", "locked")
    refusal, _ = _calls(data, "relock", "locked")
    groups, facts = [], {}
    for n in sorted(set(relock.nbytes) & set(query.nbytes) & set(unlock.nbytes)):
        size = binary_size(n)
        a, u, q = (x[x.nbytes == n] for x in (relock, unlock, query))
        path = _path_ns([a, u])
        groups.append((size, ratio_ci(path.ns, q.ns, _rep(path), _rep(q))))
        told = refusal[refusal.nbytes == n]
        facts[size] = (f"a {words} takes {fmt_ns(a.ns.median())} and its unlock {fmt_ns(u.ns.median())} at {size}, "
                       f"a query of locked memory {fmt_ns(q.ns.median())} ({src})"
                       + (f"; the runtime refuses the re-lock itself ({refused}) in {fmt_ns(told.ns.median())}"
                          if refused and len(told) else ""))
    if not groups:
        raise Missing(f"no sizes with {relock_op}, {unlock_op} and a query of locked memory")
    return _mechanism(Result(groups, "(re-lock + its unlock) / query per size", facts=facts), words)


def _c7(data):
    """The re-lock path against a query; where the runtime grants the re-lock, the unlock that
    second lock needs is part of the path. Where it refuses every re-lock, no re-lock was
    performed: the path is the one pinpath's count takes (the analogue of ROCT's count), and
    without it the test is not applicable (the refusal shown for information)."""
    lc = _get(data, "lock_cost")
    refused = _refused_all(lc[lc.op == "relock"])
    if refused:
        if not (lc.op == "relock_counted").any():
            r = _per_size(data, ("relock", "locked"), ("query", "locked"))
            return _no_relock(refused, "the refusal / a query: " + ", ".join(f"{g} {_fmt_est(e, 'x')}" for g, e in r.groups))
        return _relock_vs_query(data, "relock_counted", "unlock_after_relock_counted", COUNTED, refused)
    if (lc.op == "unlock_after_relock").any():
        return _relock_vs_query(data, "relock", "unlock_after_relock", GRANTED)
    r = _per_size(data, ("relock", "locked"), ("query", "locked"))
    return Result(r.groups, r.detail + "; the re-lock is granted", facts=r.facts)


def _c8(data):
    s = _get(data, "semantics")
    twice = s[s.probe == "lock_twice_unlock_once"]
    second, still = twice[twice.action == "lock A again"], twice[twice.action == "query A"].locked
    if not len(second) or not len(still):
        raise Missing("the lock-twice probe did not reach its query")
    counted = second.error.iloc[0] == "" and bool(still.iloc[0])
    detail = ("second lock " + ("granted" if second.error.iloc[0] == "" else f"refused ({second.error.iloc[0]})")
              + ("; still locked after one unlock" if bool(still.iloc[0]) else "; not locked after one unlock"))
    return Result([("lock twice, unlock once", _exact(1.0 if counted else 0.0))], detail,
                  facts={"": f"locked twice and unlocked once, the memory is {detail}"})


def _c9_relock(data) -> tuple[str, str]:
    """(the runtime's answer where it refused every re-lock, "" otherwise; whether pinpath's count was measured)."""
    lc = _get(data, "lock_cost")
    return _refused_all(lc[lc.op == "relock"]), (lc.op == "relock_counted").any()


def _c9_lock(data):
    refused, counted = _c9_relock(data)
    if refused and not counted:
        r = _per_size(data, ("lock", "pageable"), ("relock", "locked"))
        return _no_relock(refused, "a lock / the refusal: " + ", ".join(f"{g} {_fmt_est(e, 'x')}" for g, e in r.groups))
    if refused:
        return _mechanism(_per_size(data, ("lock", "pageable"), ("relock_counted", "locked")), COUNTED)
    return _mechanism(_per_size(data, ("lock", "pageable"), ("relock", "locked")), GRANTED)


def _c9_unlock(data):
    refused, counted = _c9_relock(data)
    if refused and counted:
        return _mechanism(_per_size(data, ("unlock", "locked"), ("unlock_after_relock_counted", "locked")), COUNTED)
    inner, _ = _calls(data, "unlock_after_relock", "locked")
    if not len(inner):
        answers = _answer(_get(data, "lock_cost").query("op == 'relock'"))
        return Result(not_applicable=f"never arose: the runtime refuses the second lock ({answers or 'refused'}) "
                                     "and makes no unlock of memory the application pinned")
    return _mechanism(_per_size(data, ("unlock", "locked"), ("unlock_after_relock", "locked")), GRANTED)


def _c10_split(data) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The runtime's calls and the application's own (``caller == "application"``) of api_calls."""
    c = _get(data, "api_calls")
    app = c["caller"].astype(str) == "application" if "caller" in c else pd.Series(False, index=c.index)
    return c[~app], c[app]


def _counted_arm(c: pd.DataFrame) -> pd.Series:
    """api_calls rows of the arm whose re-locks pinpath counted (False where a run has no such arm)."""
    return c.counted.fillna(False).astype(bool) if "counted" in c else pd.Series(False, index=c.index)


def _c10_arms(data) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """(the runtime's calls with user pinning of the arm judged, without user pinning, its mechanism):
    pinpath's count where it was measured (the engine measures it only where the runtime keeps no
    count: CUDA refuses the re-lock, mlock grants it but its unlock undoes the application's pin),
    else the runtime's own arm, refused or granted by the runtime."""
    c, _ = _c10_split(data)
    pinned, counted = c.user_pinned.astype(bool), _counted_arm(c)
    if counted.any():
        return c[pinned & counted], c[~pinned], COUNTED
    with_ = c[pinned & ~counted]
    lock = with_[with_.category == "lock"]
    return with_, c[~pinned], REFUSED if len(lock) and (lock.rc > 0).all() else GRANTED


def _c10_lock(data):
    """The runtime's average lock call with user pinning against without, on the arm ``_c10_arms``
    judges; where the runtime refused every lock of registered memory and pinpath's count was not
    measured, no re-lock was performed (not applicable). The runtime's own arm is shown beside
    pinpath's count for information."""
    c, _ = _c10_split(data)
    a_all, b_all, words = _c10_arms(data)
    a, b = a_all[a_all.category == "lock"], b_all[b_all.category == "lock"]
    if not len(a) or not len(b):
        raise Missing("the replica made no lock calls with or without user pinning")
    own = c[c.user_pinned.astype(bool) & ~_counted_arm(c) & (c.category == "lock")]
    refused = int((own.rc > 0).sum())
    if words == REFUSED:   # no re-lock was performed and pinpath's count was not measured
        return _no_relock(f"{refused} of {len(own)} locks of memory the application registered",
                          f"those refusals average {fmt_ns(own.duration_ns.mean())} against "
                          f"{fmt_ns(b.duration_ns.mean())} for {len(b)} real locks without user pinning ({REFUSED})")
    with_ = (f"{len(a)} lock calls of the runtime" + (" (counted by pinpath: no runtime call)" if words == COUNTED else "")
             + " with user pinning" + (f" ({int((a.rc > 0).sum())} refused)" if (a.rc > 0).any() else "")
             + f" average {fmt_ns(a.duration_ns.mean())}")
    detail = f"{with_} ({words}); {len(b)} without average {fmt_ns(b.duration_ns.mean())}; thread: 51438 ns vs 84873 ns"
    if words == COUNTED and len(own):   # the runtime's own arm, for information
        told = REFUSED if refused == len(own) else GRANTED
        detail += (f"; for information, the runtime's own {len(own)} locks of registered memory "
                   + (f"({refused} refused) " if refused else "") + f"average {fmt_ns(own.duration_ns.mean())} ({told})")
    return _mechanism(Result([("lock calls", ratio_ci(a.duration_ns, b.duration_ns, _rep(a), _rep(b)))], detail,
                             facts={"": with_ + f", against {fmt_ns(b.duration_ns.mean())} for {len(b)} real locks without"}),
                      words)


def _c10_total(data):
    """Every native call over the replica, the application's own pinning calls included (the
    thread's table has them: hsa_amd_memory_lock_to_pool); with user pinning, the arm
    ``_c10_arms`` judges, labelled with its mechanism."""
    c, app = _c10_split(data)
    if not len(app):
        raise Missing("the application's own pinning calls are not recorded in api_calls (no caller == "
                      "'application' rows), and the thread's table counts them")
    _, _, words = _c10_arms(data)
    def judged(x):   # no user pinning, and with it the arm judged
        return x[~x.user_pinned.astype(bool) | (_counted_arm(x) == (words == COUNTED))]
    everything, app = judged(pd.concat([c, app])), judged(app)
    pinned = everything.user_pinned.astype(bool)
    a, b = everything[pinned].duration_ns.sum(), everything[~pinned].duration_ns.sum()
    if not b:
        raise Missing("no replica calls without user pinning")
    if "repeat" in everything:   # the replica's native-call time per repeat, the repeats resampled
        sums = everything.groupby(["user_pinned", "repeat"]).duration_ns.sum().reset_index()
        sa, sb = sums[sums.user_pinned.astype(bool)], sums[~sums.user_pinned.astype(bool)]
        est = ratio_ci(sa.duration_ns, sb.duration_ns, sa.repeat.to_numpy(), sb.repeat.to_numpy())
    else:
        est = Estimate(a / b, a / b, a / b, len(everything), 1)   # one run: a single repeat
    detail = (f"all native calls over the replica: {fmt_ns(a)} with user pinning (of which the application's own "
              f"{len(app)} calls {fmt_ns(app.duration_ns.sum())}), {fmt_ns(b)} without")
    return _mechanism(Result([("whole replica", est)], detail,
                             facts={"": f"with user pinning the replica's native calls take {fmt_ns(a)}, the "
                                        f"application's {len(app)} own pinning calls included, and {fmt_ns(b)} without"}),
                      words)
