"""From the replay to predictions: per variant the transfer time of the whole trace, of each
region and of each step, with bootstrap intervals (medians of the replayed events, resampled);
the ranking; the break-evens (after how many uses of a buffer a variant's one-off cost per buffer
is paid back by what it saves per transfer).

A transfer is charged the replayed time of its class (size, direction, reuse class) and of its
use (the buffer's first transfer or a later one) and, where the replay carries the offload
runtime's own term for the variant (event "runtime", ``runtime_term``), that term of its size and
direction; a buffer is charged its one-off events (map, unmap; register and unregister where the
application registers it) once, in the region of its first (map, register) and last (unmap,
unregister) transfer; where the trace says when it was mapped and unmapped (bit 8's lines,
``pattern.maps``), each map and unmap is charged where it happens (an array mapped every step
pays its map, its unmap and, under lock_mapped on AMD, their lock and unlock every step), and a
copy a map or an unmap made (``at``) carries the runtime's term of that directive (``runtime_map``,
``runtime_unmap``: probed as `target enter data` / `exit data`), as does a map or unmap that copies
nothing (direction "none").

Each charge is looked up under the variant that moves it (``via``): a variant whose model is the
baseline's on this runtime (NVIDIA's lock_mapped: its plugin ignores the variable) is charged
exactly as the baseline, so it is never ranked apart from it by noise; and the buffers a user cannot
pin (a stack variable, the runtime's own ``KernelLaunchEnv``: ``pattern.owner_of``) are charged as
the baseline moves them under a variant where the application pins its arrays or the runtime locks
the mapped ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..stats import interval, median_draws
from .pattern import Pattern, pow2_floor
from .runtime_term import NO_COPY, RUNTIME_EVENT, RUNTIME_EVENTS

__all__ = ["Prediction", "predict", "ranked", "same_as", "charged_as", "runtime_keys", "BUFFER_EVENTS", "BASELINE"]

BUFFER_EVENTS = ("register", "map", "unmap", "unregister")
BASELINE = "plain"


def same_as(policies: dict, variant: str, baseline: str = BASELINE) -> str:
    """``baseline`` where ``variant``'s model (policy, user_pinned, threshold) is the baseline's on
    this runtime (the variant changes nothing there), else ``variant`` itself."""
    if variant != baseline and baseline in policies and tuple(policies[variant]) == tuple(policies[baseline]):
        return baseline
    return variant


def _via(policies: dict, variant: str, owner: pd.Series, baseline: str = BASELINE) -> np.ndarray:
    """Per transfer (its array's ``owner``) the variant whose events charge it under ``variant``."""
    v = same_as(policies, variant, baseline)
    policy, pinned, _ = policies[v]
    if baseline in policies and (pinned or "lock_mapped" in policy):   # what the user pins, the runtime locks
        return np.where(owner.to_numpy() == "application", v, baseline)
    return np.full(len(owner), v, dtype=object)


@dataclass
class Prediction:
    totals: pd.DataFrame      # variant, predicted_ns, low, high, per_transfer_ns, n_regions, region_{median,min,max}_ns,
                              # rank, not_replayed
    regions: pd.DataFrame     # variant, signature, n_regions, transfers, predicted_ns, low, high (per region)
    steps: pd.DataFrame       # the same per step (empty where the trace has no steps)
    break_even: pd.DataFrame  # variant, nbytes, direction, one_off_ns, saving_ns, uses, low, high, verdict
    by_class: pd.DataFrame    # variant, nbytes, direction, reuse, use, median_ns, low, high, n (for the figure)
    typical: pd.DataFrame     # variant, by (step, where the trace has steps, and region), group, n_groups,
                              # predicted_ns, low, high: the median step and region with its interval
    arrays: pd.DataFrame      # variant, array, name, nbytes, transfers, one_off_ns, saving_ns, uses, low, high, pays
    typical_draws: dict | None = None   # (variant, by) -> the bootstrap draws of ``typical``'s prediction


class _Keys:
    """Event samples keyed (variant, event, nbytes, direction, reuse, use), with their bootstrap
    medians drawn once so that sums and ratios share the same draws."""

    def __init__(self, rep: pd.DataFrame) -> None:
        ok = rep[rep.event != "refused"]
        self.groups = {k: g.ns.to_numpy(dtype=float) for k, g in
                       ok.groupby(["variant", "event", "nbytes", "direction", "reuse", "use"])}
        self.draws, self.point = {}, {}
        for i, (k, x) in enumerate(sorted(self.groups.items())):
            self.draws[k] = median_draws(x, seed=i)
            self.point[k] = float(np.median(x))

    def runtime_variants(self) -> set:
        """The variants whose replay carries the offload runtime's term."""
        return {k[0] for k in self.groups if k[1] in _TERMS}

    def runtime_keys(self) -> set:
        """(variant, event, nbytes, direction) of every runtime term the replay carries."""
        return {k[:4] for k in self.groups if k[1] in _TERMS}

    def per_copy(self, variant, nbytes, direction, use):
        """Point and draws of one transfer of a class: its copy, plus the runtime's term where
        the variant has one."""
        pt, dr = self.pooled(variant, "transfer", nbytes, direction, use)
        if variant in self.runtime_variants():   # an update's term, else the map's or unmap's that made it
            have = self.runtime_keys()
            ev = next((e for e in RUNTIME_EVENTS.values() if (variant, e, nbytes, direction) in have), RUNTIME_EVENT)
            rpt, rdr = self.pooled(variant, ev, nbytes, direction)
            pt, dr = pt + rpt, dr + rdr
        return pt, dr

    def pooled(self, variant, event, nbytes, direction=None, use=None):
        """Point and draws of the samples of an event pooled over what is not given."""
        ks = [k for k in self.groups if k[0] == variant and k[1] == event and k[2] == nbytes
              and (direction is None or k[3] == direction) and (use is None or k[5] == use)]
        if not ks:
            return math.nan, np.full(len(next(iter(self.draws.values()))) if self.draws else 1, np.nan)
        x = np.concatenate([self.groups[k] for k in ks])
        key = (variant, event, nbytes, direction, None, use)
        if key not in self.draws:
            self.draws[key] = median_draws(x, seed=len(self.draws))
            self.point[key] = float(np.median(x))
        return self.point[key], self.draws[key]


def _owner(t: pd.DataFrame) -> pd.Series:
    return t.owner if "owner" in t.columns else pd.Series("application", index=t.index)


def charged_as(policies: dict, variant: str, transfers: pd.DataFrame) -> np.ndarray:
    """Per transfer of ``transfers``, the variant whose events charge it under ``variant``."""
    return _via(policies, variant, _owner(transfers))


_TERMS = frozenset(RUNTIME_EVENTS.values())


def runtime_keys(rep: pd.DataFrame) -> set:
    """(variant, event, nbytes, direction) of every runtime term in the replay's rows."""
    r = rep[rep.event.isin(_TERMS)]
    return set(zip(r.variant, r.event, r.nbytes, r.direction))


def _transfer_rows(t: pd.DataFrame, via: np.ndarray, runtime: set) -> pd.DataFrame:
    """Each transfer's charge rows: its copy under its ``via`` variant and, where that variant
    carries the runtime's term (``runtime``: its keys, ``runtime_keys``), the term of its size and
    direction: of the map or unmap that made the copy where the transfer's ``at`` says so and that
    term was probed, else of an update."""
    rows = pd.DataFrame({"pos": np.arange(len(t)), "region": t.region.to_numpy(), "step": t.step.to_numpy(),
                         "via": via, "event": "transfer",
                         "nbytes": t.class_nbytes.to_numpy(), "direction": t.direction.to_numpy(),
                         "reuse": t.reuse_class.to_numpy(), "use": t.use.to_numpy()})
    variants = {k[0] for k in runtime}
    rt = rows[rows.via.isin(variants)]
    at = (t["at"].to_numpy() if "at" in t.columns else np.full(len(t), ""))[rt.pos.to_numpy()]
    wanted = [RUNTIME_EVENTS.get(a, RUNTIME_EVENT) for a in at]
    event = [w if (v, w, nb, d) in runtime else RUNTIME_EVENT
             for w, v, nb, d in zip(wanted, rt.via, rt.nbytes, rt.direction)]
    return pd.concat([rows, rt.assign(event=event, reuse=None, use=None)], ignore_index=True)


def _counted(rows: pd.DataFrame) -> pd.DataFrame:
    return (rows.fillna({"direction": "", "reuse": -1, "use": -1})
            .groupby(["region", "step", "via", "event", "nbytes", "direction", "reuse", "use"], dropna=False).size()
            .rename("count").reset_index())


def _charges(p: Pattern, policies: dict, variant: str, runtime: set) -> pd.DataFrame:
    """What the trace charges under ``variant``: rows of (region, step, key, count). ``runtime``:
    the runtime terms the replay carries (``runtime_keys``)."""
    t = p.transfers
    tr = _transfer_rows(t, _via(policies, variant, _owner(t)), runtime)
    b = p.arrays
    nb = pow2_floor(b.nbytes) if p.size_binned else b.nbytes.to_numpy()
    via = _via(policies, variant, _owner(b))
    pinned = np.array([bool(policies[v][1]) for v in via], dtype=bool)
    step_of = t.groupby("region").step.first()
    parts = [tr]
    maps = p.maps[p.maps.array != ""] if p.maps is not None and len(p.maps) else None
    for ev in BUFFER_EVENTS:
        if maps is not None and ev in ("map", "unmap"):   # each where the trace made it
            parts.append(_map_rows(p, maps[maps.event == ev], policies, variant, runtime, nb))
            continue
        keep = pinned if ev in ("register", "unregister") else np.ones(len(b), dtype=bool)
        region = (b.first_region if ev in ("register", "map") else b.last_region).to_numpy()[keep]
        parts.append(pd.DataFrame({"region": region, "step": step_of.reindex(region).to_numpy(), "via": via[keep],
                                   "event": ev, "nbytes": nb[keep], "direction": None, "reuse": None, "use": None}))
    return _counted(pd.concat(parts, ignore_index=True))


def _map_rows(p: Pattern, maps: pd.DataFrame, policies: dict, variant: str, runtime: set, array_nb) -> pd.DataFrame:
    """The charges of the trace's maps (or unmaps) ``maps``: the replay's map event of its array's
    size (the policy's lock under lock_mapped on AMD) and, where it copies nothing and the runtime's
    term of such a map was probed, that term (direction "none")."""
    nb_of = pd.Series(array_nb, index=p.arrays.array.to_numpy())
    via = _via(policies, variant, maps.owner)
    rows = pd.DataFrame({"region": maps.region.to_numpy(), "step": maps.step.to_numpy(), "via": via,
                         "event": maps.event.to_numpy(), "nbytes": nb_of.reindex(maps.array).to_numpy(),
                         "direction": None, "reuse": None, "use": None})
    bare = ~maps.copied.fillna(False).astype(bool).to_numpy() & maps.remapped.to_numpy()
    own_nb = (pow2_floor(maps.nbytes) if p.size_binned else maps.nbytes.to_numpy())[bare]
    term = RUNTIME_EVENTS[maps.event.iat[0]] if len(maps) else RUNTIME_EVENT
    probed = np.array([(v, term, n, NO_COPY) in runtime for v, n in zip(via[bare], own_nb)], dtype=bool)
    extra = rows[bare][probed].assign(event=term, nbytes=own_nb[probed], direction=NO_COPY)
    return pd.concat([rows, extra], ignore_index=True)


def _lookup(keys: _Keys, variant: str, ev, nb, d, r, u):
    """Point and draws of one charged event of ``variant`` (the charge's ``via``)."""
    if ev == "transfer":
        k = (variant, ev, nb, d, r, u)
        return (keys.point[k], keys.draws[k]) if k in keys.groups else keys.pooled(variant, ev, nb, d, u)
    if ev in _TERMS:
        return keys.pooled(variant, ev, nb, d)
    return keys.pooled(variant, ev, nb)


_KEY = ["via", "event", "nbytes", "direction", "reuse", "use"]


def _value(keys: _Keys, ch: pd.DataFrame) -> tuple[float, np.ndarray]:
    """Point and draws of the charges' sum (NaN if any charged event was not replayed)."""
    total, draws = 0.0, 0.0
    for k, n in ch.groupby(_KEY)["count"].sum().items():
        pt, dr = _lookup(keys, *k)
        total += n * pt
        draws = draws + n * dr
    return total, np.asarray(draws, dtype=float)


def _matrix(keys: _Keys, ch: pd.DataFrame, by: str):
    """Per group of ``by`` (>= 0): the counts of each charged event (groups x events), with the
    events' points and draws (a group's point is ``counts @ points``, its draws ``counts @ draws``)
    and the events themselves."""
    ch = ch[ch[by] >= 0]
    uniq = ch[_KEY].drop_duplicates().reset_index(drop=True)
    looked = [_lookup(keys, *k) for k in uniq.itertuples(index=False)]
    col = pd.Series(range(len(uniq)), index=pd.MultiIndex.from_frame(uniq))
    k = col.reindex(pd.MultiIndex.from_frame(ch[_KEY])).to_numpy()
    groups, g = np.unique(ch[by].to_numpy(), return_inverse=True)
    counts = np.zeros((len(groups), len(uniq)))
    np.add.at(counts, (g, k), ch["count"].to_numpy())
    pts = np.array([pt for pt, _ in looked], dtype=float)
    draws = np.vstack([np.broadcast_to(dr, (len(next(iter(keys.draws.values()))),)) for _, dr in looked]) \
        if looked else np.zeros((0, 1))
    return groups, counts, pts, draws, uniq


def _per_group_points(keys: _Keys, ch: pd.DataFrame, by: str) -> pd.Series:
    """The point prediction of every group (region or step), without intervals."""
    groups, counts, pts, _, _ = _matrix(keys, ch, by)
    return pd.Series(counts @ pts if len(pts) else np.zeros(len(groups)), index=groups)


def _grouped(keys: _Keys, variant: str, ch: pd.DataFrame, by: str, max_signatures: int = 200) -> pd.DataFrame:
    """Per group (region or step): groups with the same charges share one signature and one row."""
    groups, counts, pts, draws, uniq = _matrix(keys, ch, by)
    if not len(groups):
        return pd.DataFrame()
    sig = pd.Series([row.tobytes() for row in counts])
    members = sorted(sig.groupby(sig).groups.values(), key=lambda m: (-len(m), m[0]))
    is_tr = (uniq.event == "transfer").to_numpy()
    rows = []
    for j, m in enumerate(members[:max_signatures]):
        c = counts[m[0]]
        lo, hi = interval(c @ draws)
        rows.append({"variant": variant, "signature": j, f"n_{by}s": len(m), "transfers": int(c[is_tr].sum()),
                     "predicted_ns": float(c @ pts), "low": lo, "high": hi, f"first_{by}": int(groups[m].min())})
    return pd.DataFrame(rows)


def predict(p: Pattern, rep: pd.DataFrame, policies: dict) -> Prediction:
    """Predictions for every variant of ``policies`` (variant -> (policy, user_pinned, threshold))."""
    keys = _Keys(rep)
    with_runtime = runtime_keys(rep)
    runtime_variants = {k[0] for k in with_runtime}
    refused = rep[rep.event == "refused"].groupby("variant").error.first()
    totals, regions, steps, classes, typical, typical_draws = [], [], [], [], [], {}
    n_transfers = len(p.transfers)
    for variant, (policy, pinned, _) in policies.items():
        ch = _charges(p, policies, variant, with_runtime)
        pt, dr = _value(keys, ch)
        lo, hi = interval(dr)
        per_region = _per_group_points(keys, ch, "region")
        totals.append({"variant": variant, "policy": policy, "user_pinned": bool(pinned), "predicted_ns": pt,
                       "same_as": same_as(policies, variant),
                       "low": lo, "high": hi, "per_transfer_ns": pt / n_transfers if n_transfers else math.nan,
                       "n_regions": len(per_region), "region_median_ns": per_region.median(),
                       "region_min_ns": per_region.min(), "region_max_ns": per_region.max(),
                       "not_replayed": refused.get(same_as(policies, variant), ""),
                       "runtime_term": same_as(policies, variant) in runtime_variants})
        regions.append(_grouped(keys, variant, ch, "region"))
        has_steps = bool((p.transfers.step >= 0).any())
        if has_steps:
            steps.append(_grouped(keys, variant, ch, "step"))
        for by in ("step", "region") if has_steps else ("region",):
            per = per_region if by == "region" else _per_group_points(keys, ch, "step")
            if len(per):
                group = per.index[np.argsort(per.to_numpy(), kind="stable")[(len(per) - 1) // 2]]   # lower median
                gpt, gdr = _value(keys, ch[ch[by] == group])
                glo, ghi = interval(gdr)
                typical_draws[(variant, by)] = gdr
                typical.append({"variant": variant, "by": by, "group": int(group), "n_groups": len(per),
                                "predicted_ns": gpt, "low": glo, "high": ghi})
    for (v, ev, nb, d, r, u), x in keys.groups.items():
        if ev == "transfer":
            lo, hi = interval(keys.draws[(v, ev, nb, d, r, u)])
            classes.append({"variant": v, "nbytes": nb, "direction": d, "reuse": r, "use": u,
                            "median_ns": keys.point[(v, ev, nb, d, r, u)], "low": lo, "high": hi, "n": len(x)})
    tot = ranked(pd.DataFrame(totals))
    return Prediction(tot.sort_values("predicted_ns", ignore_index=True),
                      pd.concat(regions, ignore_index=True) if regions else pd.DataFrame(),
                      pd.concat(steps, ignore_index=True) if steps else pd.DataFrame(),
                      _break_even(keys, p, policies), pd.DataFrame(classes), pd.DataFrame(typical),
                      _array_break_even(keys, p, policies), typical_draws)


def ranked(tot: pd.DataFrame) -> pd.DataFrame:
    """``tot`` with ``rank``: by predicted time, a variant whose interval overlaps the one ranked
    just before it shares that rank (the prediction cannot tell them apart: on CUDA, lock_mapped
    runs plain's path and differs from it only by the noise of the probe); <NA> where not replayed."""
    order = tot.predicted_ns.sort_values(kind="stable").index
    rank, prev, out = 0, None, {}
    for pos, i in enumerate(order, start=1):
        r = tot.loc[i]
        if not np.isfinite(r.predicted_ns):
            continue
        if prev is None or not r.low <= prev.high:
            rank = pos
        out[i], prev = rank, r
    return tot.assign(rank=pd.array([out.get(i) for i in tot.index], dtype="Int64"))


def _one_off(keys: _Keys, variant: str, pinned: bool, nbytes: int) -> tuple[float, np.ndarray]:
    """A variant's one-off events for one buffer or array of ``nbytes``: point and draws."""
    total, draws = 0.0, 0.0
    for ev in BUFFER_EVENTS:
        if ev in ("register", "unregister") and not pinned:
            continue
        e, de = keys.pooled(variant, ev, nbytes)
        total, draws = total + e, draws + de
    return total, np.asarray(draws, dtype=float)


def _same_policy(policies: dict, variant: str, baseline: str) -> bool:
    """Whether ``variant`` runs the same policy as ``baseline`` on this runtime (say lock_mapped on
    NVIDIA's plugin, which ignores the variable): the two replays differ only by noise."""
    v, b = policies[variant], policies[baseline]
    return v[::2] == b[::2] and bool(v[1]) == bool(b[1])


def _array_break_even(keys: _Keys, p: Pattern, policies: dict, baseline: str = "plain") -> pd.DataFrame:
    """Per variant other than ``baseline`` and per array the application owns (a stack variable or
    the runtime's own buffer is nothing a user can register): the extra one-off cost at the array's
    size over the mean saving per transfer of the array's own transfers; ``pays`` where the array
    moves at least as often as the break-even's upper bound."""
    if baseline not in policies or not len(p.arrays):
        return pd.DataFrame()
    rows = []
    t = p.transfers
    arr = t.array.map(pd.Series(range(len(p.arrays)), index=p.arrays.array)).to_numpy()
    with_runtime = keys.runtime_keys()
    owners = _owner(t)

    def per_array(variant):
        tr = _transfer_rows(t, _via(policies, variant, owners, baseline), with_runtime)
        ch = (tr.assign(arr=arr[tr.pos.to_numpy()]).fillna({"reuse": -1, "use": -1})
              .groupby(["arr"] + _KEY).size().rename("count").reset_index())
        groups, counts, pts, draws, _ = _matrix(keys, ch, "arr")
        return dict(zip(groups, counts @ pts)), dict(zip(groups, counts @ draws))

    base_pt, base_dr = per_array(baseline)
    for variant, (_, pinned, _) in policies.items():
        if variant == baseline or _same_policy(policies, variant, baseline):
            continue
        var_pt, var_dr = per_array(variant)
        for i, a in enumerate(p.arrays.itertuples()):
            if getattr(a, "owner", "application") != "application":
                continue
            nb = int(pow2_floor([a.nbytes])[0]) if p.size_binned else int(a.nbytes)
            ox, dx = _one_off(keys, variant, pinned, nb)
            ob, db = _one_off(keys, baseline, bool(policies[baseline][1]), nb)
            vb, dvb, vv, dvv = base_pt[i], base_dr[i], var_pt[i], var_dr[i]
            n = int(a.transfers)
            extra, dextra = ox - ob, dx - db
            saving, dsaving = (vb - vv) / n, (dvb - dvv) / n
            s_lo, _ = interval(dsaving)
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(dsaving > 0, np.maximum(dextra, 0) / dsaving, np.inf)
            lo, hi = interval(ratio[np.isfinite(ratio)]) if np.isfinite(ratio).mean() > 0.975 else (math.nan, math.nan)
            if not (math.isfinite(saving) and math.isfinite(extra)):
                uses = math.nan
            elif not s_lo > 0:
                uses = math.inf
            else:
                uses = max(extra, 0.0) / saving
            rows.append({"variant": variant, "array": a.array, "name": a.name, "nbytes": int(a.nbytes),
                         "transfers": n, "one_off_ns": extra, "saving_ns": saving, "saving_low": s_lo,
                         "uses": uses, "low": lo, "high": hi,
                         "pays": bool(math.isfinite(hi) and n >= math.ceil(hi))})
    return pd.DataFrame(rows)


def _break_even(keys: _Keys, p: Pattern, policies: dict, baseline: str = "plain") -> pd.DataFrame:
    """Per variant other than ``baseline``, size and direction: the variant's extra one-off cost
    for an array of that size over the baseline's, divided by what it saves per later transfer."""
    if baseline not in policies or not len(p.classes):
        return pd.DataFrame()
    rows = []
    for variant, (_, pinned, _) in policies.items():
        if variant == baseline:
            continue
        for nb, d in p.classes[p.classes.transfers > 0][["nbytes", "direction"]].drop_duplicates().itertuples(index=False):
            use = 1 if any(k[:4] == (variant, "transfer", nb, d) and k[5] == 1 for k in keys.groups) else 0
            tb, db = keys.per_copy(baseline, nb, d, use)
            tv, dv = keys.per_copy(variant, nb, d, use)
            ox, dox = _one_off(keys, variant, pinned, nb)
            ob, dob = _one_off(keys, baseline, bool(policies[baseline][1]), nb)
            extra, dx = ox - ob, dox - dob
            saving, ds = tb - tv, db - dv
            s_lo, s_hi = interval(ds)
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(ds > 0, dx / ds, np.inf)
            lo, hi = interval(ratio[np.isfinite(ratio)]) if np.isfinite(ratio).mean() > 0.975 else (math.nan, math.nan)
            if _same_policy(policies, variant, baseline):   # no saving and no one-off: its replay's noise is none
                extra = saving = s_lo = s_hi = lo = hi = math.nan
                uses, verdict = math.inf, f"the same policy as {baseline} on this runtime: nothing to pay back"
            elif not (math.isfinite(saving) and math.isfinite(extra)):
                uses, verdict = math.nan, "not replayed"
            elif not s_lo > 0:   # a saving only where its whole interval is above zero
                uses, verdict = math.inf, "never pays: no measurable saving per transfer"
            elif extra <= 0:
                uses, verdict = 0.0, "pays from the first transfer (no one-off cost)"
            else:
                uses = extra / saving
                verdict = f"pays after {math.ceil(uses)} transfer(s) of the buffer"
            rows.append({"variant": variant, "nbytes": int(nb), "direction": d, "one_off_ns": extra,
                         "saving_ns": saving, "saving_low": s_lo, "saving_high": s_hi, "uses": uses, "low": lo, "high": hi, "verdict": verdict})
    return pd.DataFrame(rows)
