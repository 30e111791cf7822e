"""A toy driving world: lanes, agents, expert trajectories, and "sim" / "real" bird's-eye rasters.

World frame: metres, the ego vehicle at the origin heading +y. The ego lane's centreline is
:math:`x_c(y) = s y + c y^2` (heading ``s``, curvature ``c``), neighbour lanes are offset by the lane width
(3.5 m). Agents (1.8 m x 4.5 m boxes) drive along their lane centrelines at constant speed. The expert follows
its lane centreline with the intelligent driver model (IDM) behind the nearest agent ahead in its lane,
simulated at 0.1 s and sampled every 0.5 s for 3 s (6 waypoints, VAD/UniAD's L2@1/2/3 s horizon).

Renderings of the same scene (3 x 32 x 32, covering x in [-8, 8] m and y in [-4, 28] m):

- ``sim``: flat colours (grass, road, white lane boundaries, blue agents with a speed trail, red ego);
- ``real``: a textured road and grass, per-scene colour cast and brightness, sensor noise, slight blur, random
  shadows, fainter markings, and a small camera-pitch change (a non-linear vertical warp of the rows).

The target domain ("real") also shifts behaviour: agents are denser in the ego lane and slower.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.core import check_array, check_choice, check_int

__all__ = [
    "DRIVING_DOMAINS",
    "collision_rate",
    "generate_driving",
    "trajectory_collides",
    "trajectory_l2",
]

DRIVING_DOMAINS: tuple[str, ...] = ("sim", "real")
LANE_W, CAR_W, CAR_L = 3.5, 1.8, 4.5
HORIZON, DT_SIM, N_WP = 3.0, 0.1, 6
LANE_YS = np.linspace(2.0, 26.0, 8)  # rows at which the lane polyline is predicted
RES, X_RANGE, Y_RANGE = 32, (-8.0, 8.0), (-4.0, 28.0)


def _lane_x(y: np.ndarray, s: float, c: float, k: int) -> np.ndarray:
    return s * y + c * y**2 + k * LANE_W


def _idm_accel(v: float, v0: float, gap: float, dv: float) -> float:
    a, b, s0, t_head = 2.0, 3.0, 2.0, 1.2
    s_star = s0 + max(0.0, v * t_head + v * dv / (2 * np.sqrt(a * b)))
    return a * (1 - (v / v0) ** 4 - (s_star / max(gap, 0.1)) ** 2)


def _scene(rng: np.random.Generator, domain: str) -> dict[str, Any]:
    s, c = rng.uniform(-0.08, 0.08), rng.uniform(-0.012, 0.012)
    lanes = [0] + [k for k in (-1, 1) if rng.random() < 0.7]
    v_ego = rng.uniform(4.0, 10.0)
    n_agents = int(rng.integers(0, 4)) if domain == "sim" else int(rng.integers(1, 5))
    p_ego_lane = 0.4 if domain == "sim" else 0.65
    v_lo, v_hi = (3.0, 9.0) if domain == "sim" else (0.5, 6.0)
    agents = []  # (lane, arc y at t=0, speed)
    for _ in range(n_agents):
        lane = 0 if rng.random() < p_ego_lane else int(rng.choice(lanes))
        for _try in range(10):
            y_min = max(9.0, CAR_L + 3.0 + v_ego**2 / 12.0) if lane == 0 else 9.0  # a stoppable initial gap
            y0 = rng.uniform(y_min, max(y_min + 1.0, 26.0))
            if all(ln != lane or abs(y0 - yy) > CAR_L + 2.0 for ln, yy, _ in agents):
                agents.append((lane, y0, rng.uniform(v_lo, v_hi)))
                break
    # expert: IDM along the ego lane behind the nearest agent ahead in it
    y, v = 0.0, v_ego
    v_des = max(v_ego, 6.0)
    wps = []
    steps = int(round(HORIZON / DT_SIM))
    for k in range(1, steps + 1):
        t = (k - 1) * DT_SIM
        ahead = [(yy + vv * t - y - CAR_L, vv) for ln, yy, vv in agents if ln == 0 and yy + vv * t > y]
        if ahead:
            gap, vl = min(ahead)
            acc = _idm_accel(v, v_des, gap, v - vl)
        else:
            acc = 2.0 * (1 - (v / v_des) ** 4)
        acc = float(np.clip(acc, -9.0, 2.0))
        v_new = max(0.0, v + acc * DT_SIM)
        y += 0.5 * (v + v_new) * DT_SIM
        v = v_new
        if k % int(round(0.5 / DT_SIM)) == 0:
            wps.append((float(_lane_x(np.array(y), s, c, 0)), y))
    leader = [(yy, vv) for ln, yy, vv in agents if ln == 0]
    if leader:
        ly, lv = min(leader)
        lead = np.array([1.0, ly, lv])
    else:
        lead = np.array([0.0, 0.0, 0.0])
    return {
        "s": s,
        "c": c,
        "lanes": lanes,
        "v_ego": v_ego,
        "agents": agents,
        "traj": np.array(wps),
        "lane_vec": _lane_x(LANE_YS, s, c, 0),
        "leader": lead,
    }


def _grid() -> tuple[np.ndarray, np.ndarray]:
    xs = X_RANGE[0] + (np.arange(RES) + 0.5) * (X_RANGE[1] - X_RANGE[0]) / RES
    ys = Y_RANGE[1] - (np.arange(RES) + 0.5) * (Y_RANGE[1] - Y_RANGE[0]) / RES  # row 0 is far ahead
    gx, gy = np.meshgrid(xs, ys)
    return gx, gy


def _render(sc: dict[str, Any], domain: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    gx, gy = _grid()
    if domain == "real":  # camera-pitch change: rows are resampled non-linearly (far rows compressed)
        kappa = rng.uniform(0.12, 0.22)
        u = (Y_RANGE[1] - gy) / (Y_RANGE[1] - Y_RANGE[0])
        u2 = u + kappa * u * (1 - u) * 1.5
        gy = Y_RANGE[1] - u2 * (Y_RANGE[1] - Y_RANGE[0])
    s, c = sc["s"], sc["c"]
    road = np.zeros(gx.shape, bool)
    marks = np.zeros(gx.shape, bool)
    for k in sc["lanes"]:
        xc = _lane_x(gy, s, c, k)
        road |= np.abs(gx - xc) < LANE_W / 2
    edges = sorted({k - 0.5 for k in sc["lanes"]} | {k + 0.5 for k in sc["lanes"]})
    for e in edges:
        marks |= np.abs(gx - (s * gy + c * gy**2 + e * LANE_W)) < 0.3
    agents = np.zeros(gx.shape, bool)
    trail = np.zeros(gx.shape)
    for ln, y0, v in sc["agents"]:
        xc = _lane_x(np.array(y0), s, c, ln)
        agents |= (np.abs(gx - xc) < CAR_W / 2) & (np.abs(gy - y0) < CAR_L / 2)
        tr = (np.abs(gx - xc) < CAR_W / 4) & (gy < y0 - CAR_L / 2) & (gy > y0 - CAR_L / 2 - 0.6 * v)
        trail = np.maximum(trail, tr * 1.0)
    ego = (np.abs(gx) < CAR_W / 2) & (np.abs(gy) < CAR_L / 2)
    img = np.empty((3, RES, RES))
    if domain == "sim":
        col = {
            "grass": (0.30, 0.55, 0.30),
            "road": (0.45, 0.45, 0.45),
            "mark": (1.0, 1.0, 1.0),
            "agent": (0.15, 0.25, 0.95),
            "trail": (0.55, 0.6, 0.95),
            "ego": (0.95, 0.15, 0.15),
        }
        tex_g = tex_r = np.zeros(gx.shape)
        mark_alpha = 1.0
    else:
        col = {
            "grass": (0.35, 0.45, 0.22),
            "road": (0.32, 0.30, 0.34),
            "mark": (0.85, 0.85, 0.75),
            "agent": (0.25, 0.30, 0.75),
            "trail": (0.40, 0.45, 0.60),
            "ego": (0.85, 0.25, 0.2),
        }
        fx, fy, ph = rng.uniform(0.8, 2.0), rng.uniform(0.8, 2.0), rng.uniform(0, 6.3, 2)
        tex_g = 0.12 * np.sin(fx * gx + ph[0]) * np.cos(fy * gy + ph[1]) + 0.06 * rng.normal(size=gx.shape)
        tex_r = 0.05 * rng.normal(size=gx.shape)
        mark_alpha = rng.uniform(0.4, 0.8)
    for ch in range(3):
        layer = np.where(road, col["road"][ch] + tex_r, col["grass"][ch] + tex_g)
        layer = np.where(marks & road, (1 - mark_alpha) * layer + mark_alpha * col["mark"][ch], layer)
        layer = np.where(trail > 0, col["trail"][ch], layer)
        layer = np.where(agents, col["agent"][ch], layer)
        layer = np.where(ego, col["ego"][ch], layer)
        img[ch] = layer
    if domain == "real":
        from scipy.ndimage import gaussian_filter

        for _ in range(int(rng.integers(1, 4))):  # shadows
            cx, cy, r = rng.uniform(-8, 8), rng.uniform(-4, 28), rng.uniform(2, 6)
            img *= 1 - 0.25 * (((gx - cx) ** 2 + ((gy - cy) / 2) ** 2) < r**2)
        img = img * rng.uniform(0.7, 1.2) + rng.normal(0, 0.04, (3, 1, 1))  # brightness and colour cast
        img = np.stack([gaussian_filter(ch, 0.6) for ch in img])
        img = img + rng.normal(0, 0.05, img.shape)
    road_mask = road.astype(np.float32)  # the explicit geometry target (drivable area in the rendered frame)
    return np.clip(img, 0, 1).astype(np.float32), road_mask


def generate_driving(n: int, domain: str = "sim", *, seed: int = 0) -> dict[str, np.ndarray]:
    """Draw ``n`` driving scenes of one domain with their rasters, vectors and expert trajectories.

    Parameters
    ----------
    n : int
        Number of scenes (>= 1).
    domain : {"sim", "real"}
        Flat source rasters and source behaviour, or textured, pitched target rasters and target behaviour.
    seed : int
        Seed of every draw.

    Returns
    -------
    dict
        ``image`` (n, 3, 32, 32) float32 in [0, 1]; ``road`` (n, 32, 32) drivable-area mask; ``lane`` (n, 8) ego-lane
        centreline x at ``LANE_YS``; ``leader`` (n, 3) (present, y, speed) of the nearest ego-lane agent;
        ``ego_speed`` (n,); ``traj`` (n, 6, 2) expert waypoints; ``agents`` (n, 4, 4) agent (x, y, speed, valid)
        at t = 0 with lane index in the world (for collision checks: ``agent_lane`` (n, 4)); ``curv`` (n, 2).
    """
    n = check_int("n", n, low=1)
    check_choice("domain", domain, DRIVING_DOMAINS)
    rng = np.random.default_rng(seed)
    out = {
        "image": np.zeros((n, 3, RES, RES), np.float32),
        "road": np.zeros((n, RES, RES), np.float32),
        "lane": np.zeros((n, 8), np.float32),
        "leader": np.zeros((n, 3), np.float32),
        "ego_speed": np.zeros(n, np.float32),
        "traj": np.zeros((n, N_WP, 2), np.float32),
        "agents": np.zeros((n, 4, 4), np.float32),
        "curv": np.zeros((n, 2), np.float32),
    }
    for i in range(n):
        sc = _scene(rng, domain)
        out["image"][i], out["road"][i] = _render(sc, domain, rng)
        out["lane"][i], out["leader"][i] = sc["lane_vec"], sc["leader"]
        out["ego_speed"][i], out["traj"][i] = sc["v_ego"], sc["traj"]
        out["curv"][i] = (sc["s"], sc["c"])
        for j, (ln, y0, v) in enumerate(sc["agents"][:4]):
            out["agents"][i, j] = (ln, y0, v, 1.0)
    return out


def _agent_positions(agents: np.ndarray, curv: np.ndarray) -> np.ndarray:
    """(n, 4, 6, 2) centre of every agent at the 6 waypoint times."""
    ts = 0.5 * np.arange(1, N_WP + 1)
    lane, y0, v = agents[..., 0], agents[..., 1], agents[..., 2]
    y = y0[..., None] + v[..., None] * ts
    s, c = curv[:, 0, None, None], curv[:, 1, None, None]
    x = s * y + c * y**2 + lane[..., None] * LANE_W
    return np.stack([x, y], -1)


def trajectory_collides(traj: np.ndarray, agents: np.ndarray, curv: np.ndarray) -> np.ndarray:
    """Whether each ego trajectory overlaps an agent's box at any waypoint.

    Both boxes (1.8 m x 4.5 m) are taken with the heading of the agent's lane at the agent: they overlap when
    the ego centre is within 1.8 m across and 4.5 m along that heading of the agent centre.

    Parameters
    ----------
    traj : (n, 6, 2) ego waypoints; agents : (n, A, 4) (lane, y0, speed, valid); curv : (n, 2) (s, c).

    Returns
    -------
    ndarray of bool, shape (n,)

    Raises
    ------
    TypeError, ValueError
        Non-numeric, non-finite, empty or mis-shaped inputs (each error names the argument).
    """
    traj, agents, curv = check_array("traj", traj), check_array("agents", agents), check_array("curv", curv)
    if traj.ndim != 3 or traj.shape[1:] != (N_WP, 2) or traj.shape[0] == 0:
        raise ValueError(f"traj must have shape (n, {N_WP}, 2) with n >= 1; got {traj.shape}")
    if agents.ndim != 3 or agents.shape[0] != traj.shape[0] or agents.shape[2] != 4:
        raise ValueError(f"agents must have shape ({traj.shape[0]}, A, 4); got {agents.shape}")
    if curv.shape != (traj.shape[0], 2):
        raise ValueError(f"curv must have shape ({traj.shape[0]}, 2); got {curv.shape}")
    pos = _agent_positions(agents, curv)  # (n, A, 6, 2)
    slope = curv[:, 0, None, None] + 2 * curv[:, 1, None, None] * pos[..., 1]  # dx/dy of the lane at the agent
    norm = np.sqrt(1 + slope**2)
    rel = traj[:, None] - pos
    lon = (rel[..., 0] * slope + rel[..., 1]) / norm  # along the agent's heading
    lat = (rel[..., 0] - rel[..., 1] * slope) / norm  # across it
    hit = (np.abs(lat) < CAR_W) & (np.abs(lon) < CAR_L) & (agents[..., 3:4] > 0)
    return hit.any(axis=(1, 2))


def collision_rate(traj: np.ndarray, agents: np.ndarray, curv: np.ndarray) -> float:
    """Fraction of scenes whose ego trajectory collides with an agent (:func:`trajectory_collides`)."""
    return float(trajectory_collides(traj, agents, curv).mean())


def trajectory_l2(pred: np.ndarray, target: np.ndarray) -> dict[str, float]:
    """L2 displacement errors of waypoints: the mean over the 6 waypoints and at 1, 2 and 3 s.

    ``pred`` and ``target`` are ``(n, 6, 2)``; waypoints are 0.5 s apart, so 1/2/3 s are indices 1/3/5
    (the error *at* that time, as in UniAD; VAD averages up to it). Non-numeric, non-finite, empty or
    mis-shaped inputs raise an error naming the argument.
    """
    p, t = check_array("pred", pred), check_array("target", target)
    if p.ndim != 3 or p.shape[1:] != (N_WP, 2) or p.shape[0] == 0:
        raise ValueError(f"pred must have shape (n, {N_WP}, 2) with n >= 1; got {p.shape}")
    if p.shape != t.shape:
        raise ValueError(f"pred and target must both have shape (n, {N_WP}, 2); got {p.shape} and {t.shape}")
    e = np.linalg.norm(p - t, axis=-1)
    return {
        "l2": float(e.mean()),
        "l2_1s": float(e[:, 1].mean()),
        "l2_2s": float(e[:, 3].mean()),
        "l2_3s": float(e[:, 5].mean()),
    }
