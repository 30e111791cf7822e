r"""A synthetic multichannel LFP generator along a linear probe through a layered "atlas", with session shifts.

The atlas is a slab of six regions stacked in vertical depth :math:`y` (µm below the surface), with nominal
thicknesses ``REGION_THICKNESS`` (jittered by up to 15% per session). A linear probe (``n_channels`` contacts at
``pitch`` µm, channel 0 the shallowest) enters at a session-specific depth offset and tilt :math:`\theta`, so
contact :math:`c` sits at vertical depth :math:`y_c = y_0 + c\,\text{pitch}\cos\theta`; its label is the region at
:math:`y_c`.

**The documented depth profile.** Every contact carries a source whose power spectral density is

.. math:: S(f; y) = f^{-\chi(y)} + \sum_{k \in \text{peaks}(r(y))} a_k\, e^{-(f - f_k)^2 / 2 b_k^2},
          \qquad \chi(y) = \chi_{r(y)} + 0.4\, y / 1000,

(:math:`f \ge 1` Hz; the aperiodic exponent has a region offset ``REGIONS[r]["chi"]`` and a smooth trend in
absolute depth), plus non-sinusoidal events: sharp-wave ripples in CA1 (a 30-ms negative deflection under a
40-ms 90-Hz burst, Poisson 0.6/s) and dentate spikes in DG (a 15-ms positive spike, 1/s), waxing-waning
12-Hz spindles in the thalamus. Sources are mixed by volume conduction,
:math:`x_c = \sum_{c'} w_{cc'} s_{c'}` with :math:`w_{cc'} \propto e^{-|y_c - y_{c'}|/\lambda}` (rows sum to 1,
:math:`\lambda` = ``conduction_um``). :func:`depth_profile` returns :math:`\chi(y)` and the peaks for any depth;
the tests measure the spectra with ``scipy.signal.welch`` and check them against it.

**Session shifts** (the "probe technologies"): a session gain (log-uniform in [0.5, 2]) with per-channel
impedance jitter (log-normal, sd 0.2), 50- or 60-Hz line noise of random amplitude added after the gain (as an
amplifier's pick-up is), white amplifier noise, and a native sampling rate drawn from ``rates`` Hz; each session
is resampled (``scipy.signal.resample_poly``) to the common rate ``fs`` (250 Hz).

Inferred (the paper's data are IBL / Allen recordings, out of reach offline; notes ``lfp-geossl.md``): the six
regions and their signatures, the exponent trend, the event shapes, the atlas and the shift ranges.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from geode.core.validation import check_array, check_int, check_positive, check_real

__all__ = ["REGIONS", "LFPSession", "ProbeLayout", "depth_profile", "simulate_session"]

# region signatures: aperiodic exponent offset chi and spectral peaks (frequency Hz, relative amplitude, width Hz)
REGIONS: tuple[dict[str, Any], ...] = (
    {"name": "CTX-L2/3", "chi": 1.0, "peaks": ((40.0, 0.02, 4.0),), "thickness": 260.0},
    {"name": "CTX-L5", "chi": 1.2, "peaks": ((20.0, 0.06, 2.5),), "thickness": 260.0},
    {"name": "WM", "chi": 1.8, "peaks": (), "thickness": 160.0},
    {"name": "CA1", "chi": 1.1, "peaks": ((7.0, 0.6, 1.0),), "thickness": 220.0},
    {"name": "DG", "chi": 1.3, "peaks": ((7.0, 0.25, 1.0), (30.0, 0.02, 3.0)), "thickness": 260.0},
    {"name": "TH", "chi": 1.6, "peaks": ((12.0, 0.3, 1.2),), "thickness": 600.0},
)
"""The six regions of the simulated atlas, top to bottom: name, aperiodic exponent offset, peaks, thickness (µm)."""
CHI_SLOPE_PER_MM = 0.4


@dataclass(frozen=True)
class ProbeLayout:
    """Channel positions along a linear shank (µm from the first contact), validated to be a known layout.

    Use :meth:`linear` for a regular probe or pass ``positions`` (finite, strictly increasing). A layout with
    missing (NaN) or repeated positions is an *unknown channel layout* and is refused.
    """

    positions: np.ndarray = field(repr=False)

    def __post_init__(self) -> None:
        try:
            pos = np.asarray(self.positions, dtype=float)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"positions must be an array of numbers; got {type(self.positions).__name__}") from exc
        if pos.ndim != 1 or pos.size < 2:
            raise ValueError(f"positions must be a 1-D array of at least 2 channel positions; got shape {pos.shape}")
        if not np.isfinite(pos).all():
            raise ValueError(
                "unknown channel layout: positions hold NaN or inf (every channel needs its position on the shank)"
            )
        if not (np.diff(pos) > 0).all():
            raise ValueError("unknown channel layout: positions must be strictly increasing along the shank")
        object.__setattr__(self, "positions", pos)

    @classmethod
    def linear(cls, n_channels: int, pitch: float = 20.0) -> ProbeLayout:
        """``n_channels`` contacts ``pitch`` µm apart."""
        check_int("n_channels", n_channels, low=2)
        return cls(np.arange(n_channels) * check_real("pitch", pitch, low=0.0, low_inclusive=False))

    @property
    def n_channels(self) -> int:
        return int(self.positions.size)


@dataclass
class LFPSession:
    """One simulated recording: windows (channels, windows, samples) at ``fs``, per-channel labels and depths.

    Validated on construction: ``lfp`` a finite, non-empty 3-D array; ``region`` one integer region index per
    channel; ``depth`` one finite depth per channel; ``layout`` a :class:`ProbeLayout` with one position per
    channel; ``fs`` a finite rate > 0; ``info`` a dict. The arrays are stored as given.
    """

    lfp: np.ndarray  # (channels, windows, samples), float32
    region: np.ndarray  # (channels,) int
    depth: np.ndarray  # (channels,) vertical depth in µm
    layout: ProbeLayout
    fs: float
    info: dict[str, float]

    def __post_init__(self) -> None:
        lfp = check_array("lfp", self.lfp, ndim=3)
        if lfp.size == 0:
            raise ValueError(f"lfp must not be empty; got shape {lfp.shape}")
        n = lfp.shape[0]
        region = check_array("region", self.region, ndim=1, dtype=None)
        if not np.issubdtype(region.dtype, np.integer):
            raise TypeError(f"region must hold integer region indices; got dtype {region.dtype}")
        if region.shape != (n,) or (region < 0).any() or (region >= len(REGIONS)).any():
            raise ValueError(
                f"region must hold one index in [0, {len(REGIONS) - 1}] per channel of lfp ({n}); "
                f"got shape {region.shape}"
            )
        depth = check_array("depth", self.depth, ndim=1)
        if depth.shape != (n,):
            raise ValueError(f"depth must hold one depth per channel of lfp ({n}); got shape {depth.shape}")
        if not isinstance(self.layout, ProbeLayout):
            raise TypeError(f"layout must be a ProbeLayout; got {type(self.layout).__name__}")
        if self.layout.n_channels != n:
            raise ValueError(f"layout must have one position per channel of lfp ({n}); got {self.layout.n_channels}")
        check_positive("fs", self.fs)
        if not isinstance(self.info, dict):
            raise TypeError(f"info must be a dict; got {type(self.info).__name__}")


def _boundaries(thickness: np.ndarray) -> np.ndarray:
    return np.concatenate([[0.0], np.cumsum(thickness)])


def depth_profile(depth: float | np.ndarray, boundaries: np.ndarray | None = None) -> dict[str, Any]:
    r"""The documented source spectrum at vertical ``depth`` (µm): region index, :math:`\chi(y)` and the peaks.

    ``depth`` is a scalar or a non-empty 1-D array, finite and >= 0. ``boundaries`` are the region edges (7
    increasing values from 0); default: the nominal thicknesses. Depths below the last region belong to it.
    """
    y = check_array("depth", depth, ndim=(0, 1))
    if y.size == 0:
        raise ValueError("depth must not be empty")
    if (y < 0).any():
        raise ValueError("depth must be finite and >= 0 (µm below the surface)")
    if boundaries is None:
        b = _boundaries(np.array([r["thickness"] for r in REGIONS]))
    else:
        b = check_array("boundaries", boundaries, shape=(len(REGIONS) + 1,))
        if b[0] != 0.0 or not (np.diff(b) > 0).all():
            raise ValueError(f"boundaries must increase strictly from 0 (the surface); got {b.tolist()}")
    region = np.clip(np.searchsorted(b, y, side="right") - 1, 0, len(REGIONS) - 1)
    chi = np.array([REGIONS[r]["chi"] for r in np.atleast_1d(region)]) + CHI_SLOPE_PER_MM * np.atleast_1d(y) / 1000
    peaks = [REGIONS[r]["peaks"] for r in np.atleast_1d(region)]
    if y.ndim == 0:
        return {"region": int(region), "chi": float(chi[0]), "peaks": peaks[0]}
    return {"region": region, "chi": chi, "peaks": peaks}


def _shaped_noise(rng: np.random.Generator, amp: np.ndarray, n: int) -> np.ndarray:
    """Gaussian noise with amplitude spectrum ``amp`` (rows: channels, columns: rfft bins), unit-free."""
    spec = rng.normal(size=amp.shape) + 1j * rng.normal(size=amp.shape)
    return np.fft.irfft(spec * amp, n=n, axis=-1)


def simulate_session(
    seed: int,
    *,
    layout: ProbeLayout | None = None,
    n_windows: int = 16,
    window_s: float = 2.0,
    fs: float = 250.0,
    rates: tuple[float, ...] = (200.0, 250.0, 500.0),
    shifts: bool = True,
    tilt_deg: tuple[float, float] = (0.0, 30.0),
    offset_um: tuple[float, float] = (0.0, 500.0),
    conduction_um: float = 40.0,
) -> LFPSession:
    """Simulate one session along ``layout`` (default: 64 contacts at 20 µm). See the module docstring.

    ``rates`` are positive sampling rates; ``tilt_deg`` and ``offset_um`` finite ``(low, high)`` ranges with
    low <= high, every contact at a depth >= 0. With ``shifts=False`` the session has gain 1, no line noise,
    native rate ``fs``, no tilt, offset at the lower end of ``offset_um`` and nominal region thicknesses (the
    reference the spectral tests use).
    """
    if layout is None:
        layout = ProbeLayout.linear(64, 20.0)
    if not isinstance(layout, ProbeLayout):
        raise TypeError(f"layout must be a ProbeLayout (a known channel layout); got {type(layout).__name__}")
    check_int("n_windows", n_windows, low=1)
    window_s = check_real("window_s", window_s, low=0.0, low_inclusive=False)
    fs = check_real("fs", fs, low=0.0, low_inclusive=False)
    conduction_um = check_real("conduction_um", conduction_um, low=0.0, low_inclusive=False)
    if isinstance(rates, (str, bytes)) or not hasattr(rates, "__len__") or not len(rates):
        raise ValueError(f"rates must be a non-empty sequence of positive sampling rates; got {rates!r}")
    for i, r in enumerate(rates):
        check_positive(f"rates[{i}]", r)
    for name, pair in (("tilt_deg", tilt_deg), ("offset_um", offset_um)):
        if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise ValueError(f"{name} must be a (low, high) pair; got {pair!r}")
        lo, hi = (check_real(f"{name}[{i}]", v) for i, v in enumerate(pair))
        if lo > hi:
            raise ValueError(f"{name} must be a (low, high) pair with low <= high; got {pair!r}")
    rng = np.random.default_rng(check_int("seed", seed, low=0))
    thick = np.array([r["thickness"] for r in REGIONS])
    if shifts:
        thick = thick * rng.uniform(0.85, 1.15, thick.size)
        theta = math.radians(rng.uniform(*tilt_deg))
        y0 = rng.uniform(*offset_um)
        native = float(rng.choice(np.asarray(rates, dtype=float)))
        gain = math.exp(rng.uniform(math.log(0.5), math.log(2.0)))
        line_f = float(rng.choice([50.0, 60.0]))
        line_a = rng.uniform(0.0, 0.4)
    else:
        theta, y0, native, gain, line_f, line_a = 0.0, offset_um[0], fs, 1.0, 50.0, 0.0
    bounds = _boundaries(thick)
    depth = y0 + layout.positions * math.cos(theta)
    if (depth < 0).any():
        raise ValueError(
            f"offset_um and layout put a contact above the surface (depth {depth.min():.3g} µm < 0); "
            "raise offset_um's lower end"
        )
    prof = depth_profile(depth, bounds)
    n_nat = int(round(n_windows * window_s * native))
    f = np.fft.rfftfreq(n_nat, 1.0 / native)
    fc = np.maximum(f, 1.0)
    psd = fc[None, :] ** (-prof["chi"][:, None])
    for c, peaks in enumerate(prof["peaks"]):
        for fk, ak, bk in peaks:
            psd[c] += ak * np.exp(-((f - fk) ** 2) / (2 * bk**2))
    psd[:, 0] = 0.0
    # scale so that a unit-PSD white source has unit variance: amplitude = sqrt(psd * n * native / 2) / n
    src = _shaped_noise(rng, np.sqrt(psd * native / 2.0 * n_nat) / math.sqrt(2.0), n_nat)
    t = np.arange(n_nat) / native
    for c, r in enumerate(prof["region"]):
        name = REGIONS[r]["name"]
        if name == "CA1":  # sharp-wave ripples: negative sharp wave under a 90-Hz burst
            for t0 in rng.uniform(0, t[-1], rng.poisson(0.6 * t[-1])):
                g = np.exp(-((t - t0) ** 2) / (2 * 0.015**2))
                src[c] += -1.2 * g + 0.5 * np.exp(-((t - t0) ** 2) / (2 * 0.02**2)) * np.sin(2 * np.pi * 90 * (t - t0))
        elif name == "DG":  # dentate spikes
            for t0 in rng.uniform(0, t[-1], rng.poisson(1.0 * t[-1])):
                src[c] += 1.5 * np.exp(-((t - t0) ** 2) / (2 * 0.0075**2))
        elif name == "TH":  # waxing-waning spindles
            env = np.clip(np.sin(2 * np.pi * 0.15 * t + rng.uniform(0, 2 * np.pi)), 0, None) ** 2
            src[c] += 0.6 * env * np.sin(2 * np.pi * 12 * t + rng.uniform(0, 2 * np.pi))
    w = np.exp(-np.abs(depth[:, None] - depth[None, :]) / conduction_um)
    x = (w / w.sum(1, keepdims=True)) @ src
    if shifts:
        x = x * gain * np.exp(0.2 * rng.normal(size=(x.shape[0], 1)))
        x = x + line_a * np.sin(2 * np.pi * line_f * t + rng.uniform(0, 2 * np.pi))[None, :] * (
            1 + 0.1 * rng.normal(size=(x.shape[0], 1))
        )
        x = x + 0.05 * rng.normal(size=x.shape)
    if native != fs:
        from scipy.signal import resample_poly

        fr = Fraction(fs / native).limit_denominator(1000)
        x = resample_poly(x, fr.numerator, fr.denominator, axis=1)
    n_win = int(round(window_s * fs))
    x = x[:, : n_windows * n_win].reshape(x.shape[0], n_windows, n_win).astype(np.float32)
    info = {"gain": gain, "line_hz": line_f, "line_amp": line_a, "native_fs": native, "tilt_deg": math.degrees(theta)}
    return LFPSession(lfp=x, region=np.asarray(prof["region"]), depth=depth, layout=layout, fs=fs, info=info)
