"""Adaptive explicit Runge–Kutta method of order 8 by Dormand & Prince: DOP853.

The 12-stage order-8 formula of Prince & Dormand (1981) with the "5(3)" error estimator
of Hairer's code DOP853 (Hairer, Nørsett & Wanner I, Sect. II.10): two embedded
differences ``err5 = sum_j E5_j k_j`` (order 5) and ``err3 = sum_j E3_j k_j`` (order 3),
scaled by ``sk_i = atol + rtol max(|y_i|, |y_new_i|)`` and combined into

    err = |h| S5 / sqrt(ny (S5 + 0.01 S3)),   S5 = sum_i (err5_i / sk_i)^2,
                                                S3 = sum_i (err3_i / sk_i)^2,

which behaves like an order-8 estimate (``err ~ h err5^2 / err3 ~ h^8``), so the step
factor is 0.9 err^(-1/8), clamped to [0.2, 10] (at most 1 after a rejection), as in
scipy's ``DOP853`` (dopri5's bounds). The stage f(t + h, y_new) of an accepted step is
the first stage of the next one (one right-hand side fewer per rejected step than
evaluating it with the stages, as in dop853.f): 12 right-hand sides per accepted step,
11 per rejected one. Steps are shortened to land on output times exactly; the initial
step follows Hairer's heuristic with exponent 1/8 (dop853.f ``HINIT``, iord = 8). A step
below ``h_min`` ends the case with ``step_floor``, more than ``max_steps`` (accepted +
rejected) with ``step_budget``; a failed stage (singular matrix, ...) retries with a
quarter step, as in dopri5. After an accepted step the formulation's post-step
correction runs before that first stage is evaluated, so a projection costs no extra
right-hand side here (dopri5 re-evaluates its FSAL stage). No dense output: outputs are
the steps' end points.

The method is data: the tableau below, run by the explicit Runge-Kutta driver
(solvers/integrators/_erk_stepper.py: RK_ERR = 2 selects the 5(3) estimate above, RK_FSAL = 0 the
evaluation of f(t + h, y_new) after acceptance). Coefficients: copied as literals from
scipy's ``scipy/integrate/_ivp/dop853_coefficients.py`` (scipy 1.17.1; the values of
Hairer's ``dop853.f``): ``A`` rows 1-11 (stages 2-12), ``B = A[12, :12]``, ``C``, ``E5``,
and ``E3 = B - (BHH1 at stage 1, BHH2 at stage 9, BHH3 at stage 12)``. Only the step and
the error estimate are used (no ``D``, no extra stages).

References
----------
Prince & Dormand (1981), J. Comput. Appl. Math. 7:67-75; Hairer, Nørsett & Wanner,
*Solving ODEs I*, 2nd ed., 1993, Sect. II.4 (step control, starting step) and II.10
(DOP853 and its error estimator); E. Hairer, ``dop853.f``
(http://www.unige.ch/~hairer/software.html); scipy ``integrate._ivp.rk.DOP853``.
"""

import numpy as np
from mbstudy.solvers.integrators import _driver, _erk_stepper
from mbstudy.solvers.spec import IntegratorSpec

SPEC = IntegratorSpec(
    name="dop853",
    summary="adaptive Dormand-Prince 8(5,3) explicit Runge-Kutta method (Hairer's DOP853)",
    params=_driver.ADAPTIVE_PARAMS,
    fixed_step=False,
    forms=("index1-ode", "stabilized-ode", "nullspace-ode", "post-step-projection"),
    adaptive=True,
    order=8,
    source="Prince & Dormand 1981; Hairer, Nørsett & Wanner I, II.10 (DOP853)",
)

# The kernel driver runs the tableau below as an explicit Runge-Kutta stepper
# (solvers/integrators/_driver.py, _erk_stepper.py)
SHARED_TEMPLATES = (_driver, _erk_stepper)

RK_STAGES = 12
# Stage coefficients a_rj (scipy A[:12, :12]; row r is stage r + 1, non-zero entries only)
RK_AB = np.zeros((RK_STAGES + 1, RK_STAGES))
RK_AB[1, [0]] = [
    5.26001519587677318785587544488e-2,
]
RK_AB[2, [0, 1]] = [
    1.97250569845378994544595329183e-2,
    5.91751709536136983633785987549e-2,
]
RK_AB[3, [0, 2]] = [
    2.95875854768068491816892993775e-2,
    8.87627564304205475450678981324e-2,
]
RK_AB[4, [0, 2, 3]] = [
    2.41365134159266685502369798665e-1,
    -8.84549479328286085344864962717e-1,
    9.24834003261792003115737966543e-1,
]
RK_AB[5, [0, 3, 4]] = [
    3.7037037037037037037037037037e-2,
    1.70828608729473871279604482173e-1,
    1.25467687566822425016691814123e-1,
]
RK_AB[6, [0, 3, 4, 5]] = [
    3.7109375e-2,
    1.70252211019544039314978060272e-1,
    6.02165389804559606850219397283e-2,
    -1.7578125e-2,
]
RK_AB[7, [0, 3, 4, 5, 6]] = [
    3.70920001185047927108779319836e-2,
    1.70383925712239993810214054705e-1,
    1.07262030446373284651809199168e-1,
    -1.53194377486244017527936158236e-2,
    8.27378916381402288758473766002e-3,
]
RK_AB[8, [0, 3, 4, 5, 6, 7]] = [
    6.24110958716075717114429577812e-1,
    -3.36089262944694129406857109825,
    -8.68219346841726006818189891453e-1,
    2.75920996994467083049415600797e1,
    2.01540675504778934086186788979e1,
    -4.34898841810699588477366255144e1,
]
RK_AB[9, [0, 3, 4, 5, 6, 7, 8]] = [
    4.77662536438264365890433908527e-1,
    -2.48811461997166764192642586468,
    -5.90290826836842996371446475743e-1,
    2.12300514481811942347288949897e1,
    1.52792336328824235832596922938e1,
    -3.32882109689848629194453265587e1,
    -2.03312017085086261358222928593e-2,
]
RK_AB[10, [0, 3, 4, 5, 6, 7, 8, 9]] = [
    -9.3714243008598732571704021658e-1,
    5.18637242884406370830023853209,
    1.09143734899672957818500254654,
    -8.14978701074692612513997267357,
    -1.85200656599969598641566180701e1,
    2.27394870993505042818970056734e1,
    2.49360555267965238987089396762,
    -3.0467644718982195003823669022,
]
RK_AB[11, [0, 3, 4, 5, 6, 7, 8, 9, 10]] = [
    2.27331014751653820792359768449,
    -1.05344954667372501984066689879e1,
    -2.00087205822486249909675718444,
    -1.79589318631187989172765950534e1,
    2.79488845294199600508499808837e1,
    -2.85899827713502369474065508674,
    -8.87285693353062954433549289258,
    1.23605671757943030647266201528e1,
    6.43392746015763530355970484046e-1,
]
# the weights b_j of the order-8 solution (scipy B = A[12, :12]); b_2 .. b_5 = 0
RK_AB[RK_STAGES, [0, 5, 6, 7, 8, 9, 10, 11]] = [
    5.42937341165687622380535766363e-2,
    4.45031289275240888144113950566,
    1.89151789931450038304281599044,
    -5.8012039600105847814672114227,
    3.1116436695781989440891606237e-1,
    -1.52160949662516078556178806805e-1,
    2.01365400804030348374776537501e-1,
    4.47106157277725905176885569043e-2,
]
# Nodes c_r (scipy C[:12]); the stage at the new point (c = 1) is the next first stage.
RK_C = np.array([
    0.0,
    0.526001519587677318785587544488e-01,
    0.789002279381515978178381316732e-01,
    0.118350341907227396726757197510,
    0.281649658092772603273242802490,
    0.333333333333333333333333333333,
    0.25,
    0.307692307692307692307692307692,
    0.651282051282051282051282051282,
    0.6,
    0.857142857142857142857142857142,
    1.0,
])
# Order-5 error weights (scipy E5[:12]); E5_2 .. E5_5 = 0.
RK_E = np.zeros(RK_STAGES)
RK_E[[0, 5, 6, 7, 8, 9, 10, 11]] = [
    0.1312004499419488073250102996e-1,
    -0.1225156446376204440720569753e1,
    -0.4957589496572501915214079952,
    0.1664377182454986536961530415e1,
    -0.3503288487499736816886487290,
    0.3341791187130174790297318841,
    0.8192320648511571246570742613e-1,
    -0.2235530786388629525884427845e-1,
]
# Order-3 error weights E3 = b - bhh (scipy E3[:12]; dop853.f BHH1, BHH2, BHH3 at stages
# 1, 9 and 12).
_bhh = np.zeros(RK_STAGES)
_bhh[0] = 0.244094488188976377952755905512
_bhh[8] = 0.733846688281611857341361741547
_bhh[11] = 0.220588235294117647058823529412e-1
RK_E3 = RK_AB[RK_STAGES] - _bhh
RK_ERR = 2  # Hairer's 5(3) combination
RK_FSAL = 0
STEP_ORDER = 8
STEP_ADAPTIVE = 1
