"""Scientific machine learning: KANs, coordinate networks and PINNs, and the field's shared tools.

The paper folders live below (``geode.sciml.gckan``, ``geode.sciml.residual_can``,
``geode.sciml.inr_error``, ``geode.sciml.pde_pretrain``: pre-training mesh surrogates on 3D geometries) and
their main classes are re-exported here; what several of them can reuse
sits here too: the vectorised B-spline KAN with pykan's vocabulary (:mod:`geode.sciml.kan`),
coordinate networks (MLP, SIREN, Fourier features; :mod:`geode.sciml.nets`), stacked-ensemble training
(:mod:`geode.sciml.ensemble`) and the PINN trainer with its test problems and losses
(:mod:`geode.sciml.pinn`). The Feynman equations are in :mod:`geode.data.feynman`.

Papers and their names
----------------------
Each paper's names are re-exported here; ``geode show <slug>`` prints the same with a runnable example.

``gckan``: geometry-constrained KANs, edges made of duality maps with a learned exponent::

    from geode.sciml import (GCKAN, PAPER_EDGE, QUICK_EQUATIONS, FeynmanStudy, GCKANLayer, duality_map,
                             matched_mlp_width, param_count, run_feynman_study, summarize_study)

- ``GCKAN``: the network, ``GCKAN(width=[d_in, ..., d_out], atoms=K)`` (pykan's ``KAN`` vocabulary)
- ``GCKANLayer``: one layer of duality-map edges with a learned exponent ``p > 1`` each
- ``duality_map``: the scalar map ``J_p(u) = sign(u) |u|^(p-1)``, optionally smoothed
- ``PAPER_EDGE``: the paper's edge as keyword arguments, ``GCKAN(width, **PAPER_EDGE)``
- ``QUICK_EQUATIONS``: the eight Feynman equations of the quick check
- ``run_feynman_study``: the claim's benchmark (GC-KAN, spline KAN and matched MLP, tuned by CV)
- ``FeynmanStudy``: what ``run_feynman_study`` measured
- ``summarize_study``: headline numbers and a per-setting table of a study
- ``param_count``: trainable scalars of one member of a model
- ``matched_mlp_width``: the MLP width whose parameter count matches a target

``inr-error``: ground-truth-free error prediction for compressive signal parameterisations::

    from geode.sciml import (FAMILIES, SHEPP_LOGAN_ELLIPSES, BilinearGrid, CPFactorisation, ErrorPredictor,
                             FourierFeatures, GlobalPrediction, HashGrid, NotContractingWarning,
                             ScaledDifferencePredictor, TruncatedSVD, UndersampledFourier, check_levels,
                             estimate_rho, fit_family, piecewise_chirp, raw_rho, sample_image, shepp_logan)

- ``ErrorPredictor``: predicts every level's error from the ladder alone, ``.fit(ladder).predict_global()``
- ``GlobalPrediction``: its result (predicted errors, the bound's bracket, the contraction used)
- ``ScaledDifferencePredictor``: the authors' calibrated predictor (a per-family constant)
- ``estimate_rho``, ``raw_rho``: the contraction factor, clipped and unclipped
- ``NotContractingWarning``: warns when a ladder's differences do not decay
- ``fit_family``: fits every level of a compression ladder (directly or through a measurement operator)
- ``BilinearGrid``, ``FourierFeatures``, ``TruncatedSVD``, ``HashGrid``, ``CPFactorisation``: the families
- ``FAMILIES``: the families by name (``"grid"``, ``"fourier"``, ``"svd"``, ``"hash"``, ``"cp"``)
- ``check_levels``: validates a ladder's levels
- ``UndersampledFourier``: Cartesian undersampled MRI as a linear operator
- ``piecewise_chirp``, ``sample_image``, ``shepp_logan``: test signals; ``SHEPP_LOGAN_ELLIPSES`` the phantom's table

``pde-pretrain``: pre-training mesh PDE surrogates on random 3D geometries::

    from geode.sciml import (HKS_TIMES, N_FEATURES, GraphBatch, HeatStream, Mesh, MeshGNN, PointMLP, check_mesh,
                             collate, cotan_laplacian, curvature, deformed_sphere, descriptor_targets,
                             fisher_kpp_rollout, fit_curve, heat_kernel_signature, icosphere, kpp_dataset,
                             kpp_pairs, node_features, poisson_dataset, random_geometry, random_rotation,
                             random_smooth_field, relative_errors, rollout, screened_poisson, superquadric, torus,
                             vertex_normals)

- ``MeshGNN``: the surrogate (lift, message passing over mesh edges, replaceable head; ``with_new_head``)
- ``PointMLP``: the same without message passing (a baseline)
- ``collate``: meshes and their vertex features as one disjoint graph, a ``GraphBatch``
- ``GraphBatch``: node features, edges and per-node bookkeeping of a batch
- ``Mesh``: a validated closed triangle mesh with its Laplacian, mass, normals and eigenpairs
- ``check_mesh``, ``cotan_laplacian``, ``vertex_normals``, ``curvature``, ``heat_kernel_signature``: mesh geometry
- ``icosphere``, ``deformed_sphere``, ``superquadric``, ``torus``, ``random_geometry``, ``random_rotation``: shapes
- ``screened_poisson``, ``fisher_kpp_rollout``: P1 finite-element ground truth; ``random_smooth_field`` a field
- ``node_features``: the ``[p, n, c]`` vertex features of width ``N_FEATURES`` (10)
- ``descriptor_targets``: the geometry pretext targets (log-HKS at ``HKS_TIMES``, two curvatures)
- ``HeatStream``: online synthetic heat-equation data (physics-driven pre-training)
- ``poisson_dataset``, ``kpp_dataset``, ``kpp_pairs``: the downstream data sets
- ``fit_curve``: the Adam trainer with a learning curve; ``rollout`` an autoregressive rollout's error
- ``relative_errors``: mass-weighted relative L2 error per mesh

``residual-can``: Cauchy activations and ResidualCAN for physics-informed networks::

    from geode.sciml import (ARCHITECTURES, STEP_COST, CauchyActivation, CauchyLoss, PINNSuite, ProtocolRuns,
                             ResidualCAN, cauchy_kernel, cauchy_mlp, gaussian_kernel, make_architecture,
                             run_pinn_suite, run_protocols)

- ``ResidualCAN``: a Cauchy-activation MLP plus a softmax-weighted residual of dense Cauchy-kernel nodes
- ``CauchyActivation``: the trainable Cauchy activation ``(l1 x + l2) / (x^2 + d^2)``
- ``CauchyLoss``: the Cauchy (Lorentzian) loss, DeepXDE's ``loss(y_true, y_pred)`` signature
- ``cauchy_mlp``: an MLP with Cauchy activations (the residual dropped)
- ``cauchy_kernel``, ``gaussian_kernel``: the node kernels (Gaussian: the RBF ablation)
- ``make_architecture``: one architecture of the suite by name (``ARCHITECTURES``)
- ``STEP_COST``: Adam steps per ResidualCAN step at equal wall-clock
- ``run_pinn_suite``, ``PINNSuite``: the Allen-Cahn suite and what it measured
- ``run_protocols``, ``ProtocolRuns``: the claim's tuned, equal-wall-clock protocol and what it measured

Shared by the field (no paper of its own): ``KAN``, ``KANLayer``, ``bspline_basis``, ``uniform_grid``,
``create_dataset``, ``fit``, ``MLP``, ``SIREN``, ``FourierFeatureMLP``, ``EnsembleLinear``, ``check_width``,
``fit_ensemble``, ``member_state``, ``stack_members``, ``train_pinn``, ``PINNResult``, ``Problem``,
``StackedProblems``, ``AllenCahn1D``, ``Burgers1D``, ``Poisson1D``, ``Poisson2D``, ``MSELoss``, ``L1Loss``,
``HuberLoss``, ``derivatives``, ``relative_l2_error``.
"""

from __future__ import annotations

from geode.sciml import gckan as _gckan
from geode.sciml import inr_error as _inr_error
from geode.sciml import pde_pretrain as _pde_pretrain
from geode.sciml import residual_can as _residual_can
from geode.sciml.ensemble import fit_ensemble, member_state, stack_members
from geode.sciml.gckan import *  # noqa: F403
from geode.sciml.inr_error import *  # noqa: F403
from geode.sciml.kan import KAN, KANLayer, bspline_basis, create_dataset, fit, uniform_grid
from geode.sciml.nets import MLP, SIREN, EnsembleLinear, FourierFeatureMLP, check_width
from geode.sciml.pde_pretrain import *  # noqa: F403
from geode.sciml.pinn import (
    AllenCahn1D,
    Burgers1D,
    HuberLoss,
    L1Loss,
    MSELoss,
    PINNResult,
    Poisson1D,
    Poisson2D,
    Problem,
    StackedProblems,
    derivatives,
    relative_l2_error,
    train_pinn,
)
from geode.sciml.residual_can import *  # noqa: F403

__all__ = [
    "KAN",
    "MLP",
    "SIREN",
    "AllenCahn1D",
    "Burgers1D",
    "EnsembleLinear",
    "FourierFeatureMLP",
    "HuberLoss",
    "KANLayer",
    "L1Loss",
    "MSELoss",
    "PINNResult",
    "Poisson1D",
    "Poisson2D",
    "Problem",
    "StackedProblems",
    "bspline_basis",
    "check_width",
    "create_dataset",
    "derivatives",
    "fit",
    "fit_ensemble",
    "member_state",
    "relative_l2_error",
    "stack_members",
    "train_pinn",
    "uniform_grid",
]
# every paper's public names, re-exported (ARCHITECTURE.md: public names)
__all__ += [*_gckan.__all__, *_inr_error.__all__, *_pde_pretrain.__all__, *_residual_can.__all__]
