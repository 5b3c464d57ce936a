"""mbstudy's numerical core: mechanisms, constraint formulations, integrators, metrics.

``solvers`` never imports ``pipeline`` (nor dask, zarr, xarray or typer): every solver is
usable from a notebook with plain NumPy arrays.

Glossary (the only place the mathematical names are defined)
------------------------------------------------------------
q, v        generalized coordinates and velocities, shape (n,)
a           accelerations, shape (n,)
lam         Lagrange multipliers, shape (m,)
M           mass matrix M(q), shape (n, n)
Q           applied generalized forces Q(q, v, t), shape (n,)
phi         holonomic constraints Phi(q, t), shape (m,)
phi_q       constraint Jacobian dPhi/dq, shape (m, n)
phi_t       explicit time derivative dPhi/dt, shape (m,)
gamma       acceleration right-hand side: phi_q a = gamma, shape (m,)
u           stabilization input added to gamma (Baumgarte, DRCS), shape (m,)
h           integrator step size
omega_n, xi Baumgarte gains: Kp = omega_n**2, Kd = 2 xi omega_n
omega_o     observer bandwidth of DRCS (seed 004)
p, fp, ip   float64 parameter vectors of the model, formulation and integrator, in the
            order of their specs' ``params``
y           first-order state [q, v, W, extras]: W is the work of the drives (for the
            energy balance), extras are formulation states (the DRCS observer)

Equations of motion (docs/explanation/methods.md, index-1 form (0.1))::

    [ M      phi_q^T ] [ a   ]   [ Q         ]
    [ phi_q  0       ] [ lam ] = [ gamma + u ]
"""
