"""The 100 AI-Feynman equations (Udrescu & Tegmark 2020), written out by geode, evaluated vectorised.

Every row holds the equation's id in the numbering of the *Feynman Lectures on Physics* (``"I.6.20a"``,
``"II.11.27"``, ...), the AI-Feynman equation number (1-100), the name of its output, the formula as a
string in numpy/sympy syntax, and its variables with the AI-Feynman sampling ranges: each variable is
drawn independently from :math:`\\mathcal{U}(\\text{low}, \\text{high})`.

The rows were written by us from the published formulas and ranges of the AI-Feynman table (its file
names ``I.6.2a``, ``I.6.2`` and ``I.6.2b`` are the equations I.6.20a, I.6.20 and I.6.20b and are accepted
as aliases). No package's file was copied: the copy in pykan uses its own ranges and mislabels I.18.12
as a second ``I.18.4``.

Formulas are parsed with :mod:`sympy` (``arcsin`` -> ``asin``, ``ln`` -> ``log``; every variable is a
plain symbol, so names such as ``gamma``, ``beta`` or ``I`` never turn into sympy's functions or the
imaginary unit) and compiled with :func:`sympy.lambdify` to numpy. sympy is imported only when a formula
is first evaluated.

Examples
--------
>>> eq = get("I.6.20a")
>>> eq.variables, eq.ranges
(('theta',), ((1.0, 3.0),))
>>> X, y = eq.sample(4, seed=0)
>>> X.shape, y.shape
((4, 1), (4,))
>>> len(equations())
100
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from geode.core.random import as_generator
from geode.core.validation import check_array, check_int, check_real

__all__ = ["FeynmanEquation", "equations", "get", "ids"]

# id, AI-Feynman number, output, formula, "var low high, var low high, ..."
# fmt: off
_TABLE: tuple[tuple[str, int, str, str, str], ...] = (
    ("I.6.20a", 1, "f", "exp(-theta**2/2)/sqrt(2*pi)", "theta 1 3"),
    ("I.6.20", 2, "f", "exp(-(theta/sigma)**2/2)/(sqrt(2*pi)*sigma)", "sigma 1 3, theta 1 3"),
    (
        "I.6.20b", 3, "f", "exp(-((theta-theta1)/sigma)**2/2)/(sqrt(2*pi)*sigma)",
        "sigma 1 3, theta 1 3, theta1 1 3",
    ),
    ("I.8.14", 4, "d", "sqrt((x2-x1)**2+(y2-y1)**2)", "x1 1 5, x2 1 5, y1 1 5, y2 1 5"),
    (
        "I.9.18", 5, "F", "G*m1*m2/((x2-x1)**2+(y2-y1)**2+(z2-z1)**2)",
        "m1 1 2, m2 1 2, G 1 2, x1 3 4, x2 1 2, y1 3 4, y2 1 2, z1 3 4, z2 1 2",
    ),
    ("I.10.7", 6, "m", "m_0/sqrt(1-v**2/c**2)", "m_0 1 5, v 1 2, c 3 10"),
    ("I.11.19", 7, "A", "x1*y1+x2*y2+x3*y3", "x1 1 5, x2 1 5, x3 1 5, y1 1 5, y2 1 5, y3 1 5"),
    ("I.12.1", 8, "F", "mu*Nn", "mu 1 5, Nn 1 5"),
    ("I.12.2", 10, "F", "q1*q2*r/(4*pi*epsilon*r**3)", "q1 1 5, q2 1 5, epsilon 1 5, r 1 5"),
    ("I.12.4", 11, "Ef", "q1*r/(4*pi*epsilon*r**3)", "q1 1 5, epsilon 1 5, r 1 5"),
    ("I.12.5", 12, "F", "q2*Ef", "q2 1 5, Ef 1 5"),
    ("I.12.11", 13, "F", "q*(Ef+B*v*sin(theta))", "q 1 5, Ef 1 5, B 1 5, v 1 5, theta 1 5"),
    ("I.13.4", 9, "K", "1/2*m*(v**2+u**2+w**2)", "m 1 5, v 1 5, u 1 5, w 1 5"),
    ("I.13.12", 14, "U", "G*m1*m2*(1/r2-1/r1)", "m1 1 5, m2 1 5, r1 1 5, r2 1 5, G 1 5"),
    ("I.14.3", 15, "U", "m*g*z", "m 1 5, g 1 5, z 1 5"),
    ("I.14.4", 16, "U", "1/2*k_spring*x**2", "k_spring 1 5, x 1 5"),
    ("I.15.3x", 17, "x1", "(x-u*t)/sqrt(1-u**2/c**2)", "x 5 10, u 1 2, c 3 20, t 1 2"),
    ("I.15.3t", 18, "t1", "(t-u*x/c**2)/sqrt(1-u**2/c**2)", "x 1 5, c 3 10, u 1 2, t 1 5"),
    ("I.15.10", 19, "p", "m_0*v/sqrt(1-v**2/c**2)", "m_0 1 5, v 1 2, c 3 10"),
    ("I.16.6", 20, "v1", "(u+v)/(1+u*v/c**2)", "c 1 5, v 1 5, u 1 5"),
    ("I.18.4", 21, "r", "(m1*r1+m2*r2)/(m1+m2)", "m1 1 5, m2 1 5, r1 1 5, r2 1 5"),
    ("I.18.12", 22, "tau", "r*F*sin(theta)", "r 1 5, F 1 5, theta 0 5"),
    ("I.18.16", 23, "L", "m*r*v*sin(theta)", "m 1 5, r 1 5, v 1 5, theta 1 5"),
    ("I.24.6", 24, "E_n", "1/2*m*(omega**2+omega_0**2)*1/2*x**2", "m 1 3, omega 1 3, omega_0 1 3, x 1 3"),
    ("I.25.13", 25, "Volt", "q/C", "q 1 5, C 1 5"),
    ("I.26.2", 26, "theta1", "arcsin(n*sin(theta2))", "n 0 1, theta2 1 5"),
    ("I.27.6", 27, "foc", "1/(1/d1+n/d2)", "d1 1 5, d2 1 5, n 1 5"),
    ("I.29.4", 28, "k", "omega/c", "omega 1 10, c 1 10"),
    (
        "I.29.16", 29, "x", "sqrt(x1**2+x2**2-2*x1*x2*cos(theta1-theta2))",
        "x1 1 5, x2 1 5, theta1 1 5, theta2 1 5",
    ),
    ("I.30.3", 30, "Int", "Int_0*sin(n*theta/2)**2/sin(theta/2)**2", "Int_0 1 5, theta 1 5, n 1 5"),
    ("I.30.5", 31, "theta", "arcsin(lambd/(n*d))", "lambd 1 2, d 2 5, n 1 5"),
    ("I.32.5", 32, "Pwr", "q**2*a**2/(6*pi*epsilon*c**3)", "q 1 5, a 1 5, epsilon 1 5, c 1 5"),
    (
        "I.32.17", 33, "Pwr", "(1/2*epsilon*c*Ef**2)*(8*pi*r**2/3)*(omega**4/(omega**2-omega_0**2)**2)",
        "epsilon 1 2, c 1 2, Ef 1 2, r 1 2, omega 1 2, omega_0 3 5",
    ),
    ("I.34.8", 34, "omega", "q*v*B/p", "q 1 5, v 1 5, B 1 5, p 1 5"),
    ("I.34.10", 35, "omega", "omega_0/(1-v/c)", "c 3 10, v 1 2, omega_0 1 5"),
    ("I.34.14", 36, "omega", "(1+v/c)/sqrt(1-v**2/c**2)*omega_0", "c 3 10, v 1 2, omega_0 1 5"),
    ("I.34.27", 37, "E_n", "(h/(2*pi))*omega", "omega 1 5, h 1 5"),
    ("I.37.4", 38, "Int", "I1+I2+2*sqrt(I1*I2)*cos(delta)", "I1 1 5, I2 1 5, delta 1 5"),
    ("I.38.12", 39, "r", "4*pi*epsilon*(h/(2*pi))**2/(m*q**2)", "m 1 5, q 1 5, h 1 5, epsilon 1 5"),
    ("I.39.10", 40, "E_n", "3/2*pr*V", "pr 1 5, V 1 5"),
    ("I.39.11", 41, "E_n", "1/(gamma-1)*pr*V", "gamma 2 5, pr 1 5, V 1 5"),
    ("I.39.22", 42, "pr", "n*kb*T/V", "n 1 5, T 1 5, V 1 5, kb 1 5"),
    ("I.40.1", 43, "n", "n_0*exp(-m*g*x/(kb*T))", "n_0 1 5, m 1 5, x 1 5, T 1 5, g 1 5, kb 1 5"),
    (
        "I.41.16", 44, "L_rad", "h/(2*pi)*omega**3/(pi**2*c**2*(exp((h/(2*pi))*omega/(kb*T))-1))",
        "omega 1 5, T 1 5, h 1 5, kb 1 5, c 1 5",
    ),
    ("I.43.16", 45, "v", "mu_drift*q*Volt/d", "mu_drift 1 5, q 1 5, Volt 1 5, d 1 5"),
    ("I.43.31", 46, "D", "mob*kb*T", "mob 1 5, T 1 5, kb 1 5"),
    ("I.43.43", 47, "kappa", "1/(gamma-1)*kb*v/A", "gamma 2 5, kb 1 5, A 1 5, v 1 5"),
    ("I.44.4", 48, "E_n", "n*kb*T*ln(V2/V1)", "n 1 5, kb 1 5, T 1 5, V1 1 5, V2 1 5"),
    ("I.47.23", 49, "c", "sqrt(gamma*pr/rho)", "gamma 1 5, pr 1 5, rho 1 5"),
    ("I.48.20", 50, "E_n", "m*c**2/sqrt(1-v**2/c**2)", "m 1 5, v 1 2, c 3 10"),
    ("I.50.26", 51, "x", "x1*(cos(omega*t)+alpha*cos(omega*t)**2)", "x1 1 3, omega 1 3, t 1 3, alpha 1 3"),
    ("II.2.42", 52, "Pwr", "kappa*(T2-T1)*A/d", "kappa 1 5, T1 1 5, T2 1 5, A 1 5, d 1 5"),
    ("II.3.24", 53, "flux", "Pwr/(4*pi*r**2)", "Pwr 1 5, r 1 5"),
    ("II.4.23", 54, "Volt", "q/(4*pi*epsilon*r)", "q 1 5, epsilon 1 5, r 1 5"),
    ("II.6.11", 55, "Volt", "1/(4*pi*epsilon)*p_d*cos(theta)/r**2", "epsilon 1 3, p_d 1 3, theta 1 3, r 1 3"),
    (
        "II.6.15a", 56, "Ef", "p_d/(4*pi*epsilon)*3*z/r**5*sqrt(x**2+y**2)",
        "epsilon 1 3, p_d 1 3, r 1 3, x 1 3, y 1 3, z 1 3",
    ),
    (
        "II.6.15b", 57, "Ef", "p_d/(4*pi*epsilon)*3*cos(theta)*sin(theta)/r**3",
        "epsilon 1 3, p_d 1 3, theta 1 3, r 1 3",
    ),
    ("II.8.7", 58, "E_n", "3/5*q**2/(4*pi*epsilon*d)", "q 1 5, epsilon 1 5, d 1 5"),
    ("II.8.31", 59, "E_den", "epsilon*Ef**2/2", "epsilon 1 5, Ef 1 5"),
    ("II.10.9", 60, "Ef", "sigma_den/epsilon*1/(1+chi)", "sigma_den 1 5, epsilon 1 5, chi 1 5"),
    (
        "II.11.3", 61, "x", "q*Ef/(m*(omega_0**2-omega**2))",
        "q 1 3, Ef 1 3, m 1 3, omega_0 3 5, omega 1 2",
    ),
    (
        "II.11.17", 62, "n", "n_0*(1+p_d*Ef*cos(theta)/(kb*T))",
        "n_0 1 3, kb 1 3, T 1 3, theta 1 3, p_d 1 3, Ef 1 3",
    ),
    ("II.11.20", 63, "Pol", "n_rho*p_d**2*Ef/(3*kb*T)", "n_rho 1 5, p_d 1 5, Ef 1 5, kb 1 5, T 1 5"),
    (
        "II.11.27", 64, "Pol", "n*alpha/(1-(n*alpha/3))*epsilon*Ef",
        "n 0 1, alpha 0 1, epsilon 1 2, Ef 1 2",
    ),
    ("II.11.28", 65, "theta", "1+n*alpha/(1-(n*alpha/3))", "n 0 1, alpha 0 1"),
    ("II.13.17", 66, "B", "1/(4*pi*epsilon*c**2)*2*I/r", "epsilon 1 5, c 1 5, I 1 5, r 1 5"),
    ("II.13.23", 67, "rho_c", "rho_c_0/sqrt(1-v**2/c**2)", "rho_c_0 1 5, v 1 2, c 3 10"),
    ("II.13.34", 68, "j", "rho_c_0*v/sqrt(1-v**2/c**2)", "rho_c_0 1 5, v 1 2, c 3 10"),
    ("II.15.4", 69, "E_n", "-mom*B*cos(theta)", "mom 1 5, B 1 5, theta 1 5"),
    ("II.15.5", 70, "E_n", "-p_d*Ef*cos(theta)", "p_d 1 5, Ef 1 5, theta 1 5"),
    (
        "II.21.32", 71, "Volt", "q/(4*pi*epsilon*r*(1-v/c))",
        "q 1 5, epsilon 1 5, r 1 5, v 1 2, c 3 10",
    ),
    ("II.24.17", 72, "k", "sqrt(omega**2/c**2-pi**2/d**2)", "omega 4 6, c 1 2, d 2 4"),
    ("II.27.16", 73, "flux", "epsilon*c*Ef**2", "epsilon 1 5, c 1 5, Ef 1 5"),
    ("II.27.18", 74, "E_den", "epsilon*Ef**2", "epsilon 1 5, Ef 1 5"),
    ("II.34.2a", 75, "I", "q*v/(2*pi*r)", "q 1 5, v 1 5, r 1 5"),
    ("II.34.2", 76, "mom", "q*v*r/2", "q 1 5, v 1 5, r 1 5"),
    ("II.34.11", 77, "omega", "g_*q*B/(2*m)", "g_ 1 5, q 1 5, B 1 5, m 1 5"),
    ("II.34.29a", 78, "mom", "q*h/(4*pi*m)", "q 1 5, h 1 5, m 1 5"),
    ("II.34.29b", 79, "E_n", "g_*mom*B*Jz/(h/(2*pi))", "g_ 1 5, h 1 5, Jz 1 5, mom 1 5, B 1 5"),
    (
        "II.35.18", 80, "n", "n_0/(exp(mom*B/(kb*T))+exp(-mom*B/(kb*T)))",
        "n_0 1 3, kb 1 3, T 1 3, mom 1 3, B 1 3",
    ),
    ("II.35.21", 81, "M", "n_rho*mom*tanh(mom*B/(kb*T))", "n_rho 1 5, mom 1 5, B 1 5, kb 1 5, T 1 5"),
    (
        "II.36.38", 82, "f", "mom*H/(kb*T)+(mom*alpha)/(epsilon*c**2*kb*T)*M",
        "mom 1 3, H 1 3, kb 1 3, T 1 3, alpha 1 3, epsilon 1 3, c 1 3, M 1 3",
    ),
    ("II.37.1", 83, "E_n", "mom*(1+chi)*B", "mom 1 5, B 1 5, chi 1 5"),
    ("II.38.3", 84, "F", "Y*A*x/d", "Y 1 5, A 1 5, d 1 5, x 1 5"),
    ("II.38.14", 85, "mu_S", "Y/(2*(1+sigma))", "Y 1 5, sigma 1 5"),
    ("III.4.32", 86, "n", "1/(exp((h/(2*pi))*omega/(kb*T))-1)", "h 1 5, omega 1 5, kb 1 5, T 1 5"),
    (
        "III.4.33", 87, "E_n", "(h/(2*pi))*omega/(exp((h/(2*pi))*omega/(kb*T))-1)",
        "h 1 5, omega 1 5, kb 1 5, T 1 5",
    ),
    ("III.7.38", 88, "omega", "2*mom*B/(h/(2*pi))", "mom 1 5, B 1 5, h 1 5"),
    ("III.8.54", 89, "prob", "sin(E_n*t/(h/(2*pi)))**2", "E_n 1 2, t 1 2, h 1 4"),
    (
        "III.9.52", 90, "prob", "(p_d*Ef*t/(h/(2*pi)))*sin((omega-omega_0)*t/2)**2/((omega-omega_0)*t/2)**2",
        "p_d 1 3, Ef 1 3, t 1 3, h 1 3, omega 1 5, omega_0 1 5",
    ),
    ("III.10.19", 91, "E_n", "mom*sqrt(Bx**2+By**2+Bz**2)", "mom 1 5, Bx 1 5, By 1 5, Bz 1 5"),
    ("III.12.43", 92, "L", "n*(h/(2*pi))", "n 1 5, h 1 5"),
    ("III.13.18", 93, "v", "2*E_n*d**2*k/(h/(2*pi))", "E_n 1 5, d 1 5, k 1 5, h 1 5"),
    ("III.14.14", 94, "I", "I_0*(exp(q*Volt/(kb*T))-1)", "I_0 1 5, q 1 2, Volt 1 2, kb 1 2, T 1 2"),
    ("III.15.12", 95, "E_n", "2*U*(1-cos(k*d))", "U 1 5, k 1 5, d 1 5"),
    ("III.15.14", 96, "m", "(h/(2*pi))**2/(2*E_n*d**2)", "h 1 5, E_n 1 5, d 1 5"),
    ("III.15.27", 97, "k", "2*pi*alpha/(n*d)", "alpha 1 5, n 1 5, d 1 5"),
    ("III.17.37", 98, "f", "beta*(1+alpha*cos(theta))", "beta 1 5, alpha 1 5, theta 1 5"),
    (
        "III.19.51", 99, "E_n", "-m*q**4/(2*(4*pi*epsilon)**2*(h/(2*pi))**2)*(1/n**2)",
        "m 1 5, q 1 5, h 1 5, n 1 5, epsilon 1 5",
    ),
    ("III.21.20", 100, "j", "-rho_c_0*q*A_vec/m", "rho_c_0 1 5, q 1 5, A_vec 1 5, m 1 5"),
)
# fmt: on

# File names of the AI-Feynman table that differ from the Feynman-Lectures numbering used as ids here.
_ALIASES: dict[str, str] = {
    "I.6.2a": "I.6.20a",
    "I.6.2": "I.6.20",
    "I.6.2b": "I.6.20b",
    "I.15.1": "I.15.10",
    "I.18.14": "I.18.16",
    "I.34.1": "I.34.10",
    "I.39.1": "I.39.10",
    "I.48.2": "I.48.20",
}

# names that a formula may use besides its variables (numpy syntax, as published)
_FUNCTIONS = ("exp", "sqrt", "sin", "cos", "tanh", "arcsin", "ln", "pi")


def _check_ranges(ranges: Any, n_vars: int, name: str = "ranges") -> tuple[tuple[float, float], ...]:
    """Validate ``n_vars`` pairs ``(low, high)`` of finite numbers with ``low < high``."""
    try:
        pairs = [tuple(r) for r in ranges]
    except TypeError:
        raise TypeError(f"{name} must be a sequence of (low, high) pairs; got {type(ranges).__name__}") from None
    if len(pairs) != n_vars:
        raise ValueError(f"{name} must hold one (low, high) pair per variable ({n_vars}); got {len(pairs)}")
    out = []
    for i, pair in enumerate(pairs):
        if len(pair) != 2:
            raise ValueError(f"{name}[{i}] must be a (low, high) pair; got {pair!r}")
        low = check_real(f"{name}[{i}] low", pair[0])
        high = check_real(f"{name}[{i}] high", pair[1])
        if not low < high:
            raise ValueError(f"{name}[{i}] must have low < high; got ({low}, {high})")
        out.append((low, high))
    return tuple(out)


@dataclass(frozen=True)
class FeynmanEquation:
    """One equation of the AI-Feynman table: ``output = formula(variables)``.

    Attributes
    ----------
    id : str
        The equation's id in the Feynman Lectures numbering, e.g. ``"I.6.20a"``.
    number : int
        The AI-Feynman equation number, 1-100.
    output : str
        Name of the output quantity.
    formula : str
        The formula in numpy/sympy syntax (``exp``, ``sqrt``, ``sin``, ``cos``, ``tanh``, ``arcsin``,
        ``ln``, ``pi``).
    variables : tuple of str
        Variable names, in the column order of :meth:`sample`.
    ranges : tuple of (float, float)
        AI-Feynman sampling ranges: variable ``i`` is drawn from ``U(ranges[i][0], ranges[i][1])``.
    """

    id: str
    number: int
    output: str
    formula: str
    variables: tuple[str, ...]
    ranges: tuple[tuple[float, float], ...]
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False, hash=False)

    @property
    def n_vars(self) -> int:
        """Number of input variables."""
        return len(self.variables)

    @property
    def expr(self) -> Any:
        """The formula as a sympy expression in symbols named after :attr:`variables`."""
        if "expr" not in self._cache:
            try:
                import sympy
                from sympy.parsing.sympy_parser import parse_expr
            except ImportError:  # pragma: no cover - sympy ships with geode[dev]
                raise ImportError("geode.data.feynman needs sympy: pip install sympy (or geode[dev])") from None
            symbols = {v: sympy.Symbol(v, real=True) for v in self.variables}
            names: dict[str, Any] = {
                "exp": sympy.exp,
                "sqrt": sympy.sqrt,
                "sin": sympy.sin,
                "cos": sympy.cos,
                "tanh": sympy.tanh,
                "arcsin": sympy.asin,
                "ln": sympy.log,
                "pi": sympy.pi,
            }
            names.update(symbols)
            # Integer/Float/Symbol must come from sympy for the parser; everything else is ours
            base = {"Integer": sympy.Integer, "Float": sympy.Float, "Symbol": sympy.Symbol, "Rational": sympy.Rational}
            self._cache["expr"] = parse_expr(self.formula, local_dict=names, global_dict=base)
            self._cache["symbols"] = tuple(symbols[v] for v in self.variables)
        return self._cache["expr"]

    def evaluate(self, X: Any) -> np.ndarray:
        """The formula at the rows of ``X``.

        Parameters
        ----------
        X : array_like, shape (n, n_vars)
            One column per variable, in the order of :attr:`variables`.

        Returns
        -------
        numpy.ndarray of float64, shape (n,)
        """
        X = check_array("X", X, ndim=2, finite=True)
        if X.shape[1] != self.n_vars:
            raise ValueError(f"X must have {self.n_vars} columns ({', '.join(self.variables)}); got {X.shape[1]}")
        if "fn" not in self._cache:
            import sympy

            expr = self.expr
            self._cache["fn"] = sympy.lambdify(self._cache["symbols"], expr, modules="numpy")
        with np.errstate(all="ignore"):
            y = self._cache["fn"](*X.T)
        return np.broadcast_to(np.asarray(y, dtype=float), (X.shape[0],)).copy()

    def sample(
        self, n: int, seed: int | np.random.Generator = 0, *, ranges: Sequence[tuple[float, float]] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``n`` points with every variable uniform on its range, and evaluate the formula.

        Parameters
        ----------
        n : int
            Number of points (>= 1).
        seed : int or numpy.random.Generator
            Randomness; the same seed gives the same points.
        ranges : sequence of (low, high), optional
            Ranges that replace :attr:`ranges` (e.g. widened ones for an extrapolation test); every pair
            must have ``low < high``.

        Returns
        -------
        X : numpy.ndarray of float64, shape (n, n_vars)
        y : numpy.ndarray of float64, shape (n,)
        """
        n = check_int("n", n, low=1)
        box = self.ranges if ranges is None else _check_ranges(ranges, self.n_vars)
        rng = as_generator(seed)
        low = np.array([r[0] for r in box])
        high = np.array([r[1] for r in box])
        X = rng.uniform(low, high, size=(n, self.n_vars))
        return X, self.evaluate(X)

    def widened_ranges(self, fraction: float) -> tuple[tuple[float, float], ...]:
        """The sampling ranges widened by ``fraction`` of their width on each side."""
        fraction = check_real("fraction", fraction, low=0.0)
        return tuple((lo - fraction * (hi - lo), hi + fraction * (hi - lo)) for lo, hi in self.ranges)


def _parse_variables(spec: str) -> tuple[tuple[str, ...], tuple[tuple[float, float], ...]]:
    names, ranges = [], []
    for item in spec.split(","):
        name, low, high = item.split()
        names.append(name)
        ranges.append((float(low), float(high)))
    return tuple(names), tuple(ranges)


def _build() -> tuple[FeynmanEquation, ...]:
    rows = []
    for eq_id, number, output, formula, spec in _TABLE:
        variables, ranges = _parse_variables(spec)
        rows.append(FeynmanEquation(eq_id, number, output, formula, variables, _check_ranges(ranges, len(variables))))
    return tuple(rows)


_EQUATIONS: tuple[FeynmanEquation, ...] = _build()
_BY_ID: dict[str, FeynmanEquation] = {e.id: e for e in _EQUATIONS}
_BY_NUMBER: dict[int, FeynmanEquation] = {e.number: e for e in _EQUATIONS}


def equations(n_vars: int | Sequence[int] | None = None) -> tuple[FeynmanEquation, ...]:
    """The 100 AI-Feynman equations, in table order, optionally only those with ``n_vars`` variables.

    Parameters
    ----------
    n_vars : int or sequence of int, optional
        Keep only equations with this many (or one of these many) input variables.
    """
    if n_vars is None:
        return _EQUATIONS
    wanted = {check_int("n_vars", n_vars, low=1)} if not isinstance(n_vars, Sequence) else set(n_vars)
    for k in wanted:
        check_int("n_vars", k, low=1)
    return tuple(e for e in _EQUATIONS if e.n_vars in wanted)


def ids() -> tuple[str, ...]:
    """The ids of the 100 equations, in table order."""
    return tuple(e.id for e in _EQUATIONS)


def get(key: str | int) -> FeynmanEquation:
    """The equation with id ``key`` (e.g. ``"I.6.20a"``; the AI-Feynman file names such as ``"I.6.2a"``
    are accepted too) or AI-Feynman number ``key`` (1-100).

    Raises
    ------
    ValueError
        For an unknown id or number.
    """
    if isinstance(key, bool):
        raise TypeError(f"key must be an equation id (str) or number (int); got bool {key!r}")
    if isinstance(key, (int, np.integer)):
        if int(key) not in _BY_NUMBER:
            raise ValueError(f"unknown AI-Feynman equation number {key!r}; numbers run from 1 to 100")
        return _BY_NUMBER[int(key)]
    if not isinstance(key, str):
        raise TypeError(f"key must be an equation id (str) or number (int); got {type(key).__name__}")
    eq_id = _ALIASES.get(key, key)
    if eq_id not in _BY_ID:
        raise ValueError(f"unknown Feynman equation id {key!r}; see geode.data.feynman.ids() for the 100 ids")
    return _BY_ID[eq_id]
