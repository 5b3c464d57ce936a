"""PRADIS-style element networks (seed 003): netlist, element library, assembly, integrator.

Seed 003 describes how PRADIS turns a scheme of connected elements into equations: each
element returns its flows and their derivatives with respect to x, v, a; the solver
sums flows at every free node (the topological equation (2.16)), reduces the element
Jacobians to the chosen solution variable by the chain rule, and integrates with an
implicit first-order scheme, Newton iteration, a local-error estimate and a step rule.
The integrator never knows the physics, so the same core serves mechanical
(translational, rotational) and electrical networks — any domain whose flows balance at
nodes.

Data flow::

    text / file --parse_netlist / load_netlist--> Netlist (frozen; line numbers kept)
      --build_network--> Network (etype, enodes, eparams arrays; free nodes = DOFs)
      --implicit_run (jitted; status + counters, never raises)--> X, V, A at t_out
    simulate(netlist, t_end, t_out, params) does all of it and returns SimulationResult.

Modules
-------
netlist    the format (``$ FRAGMENT:``, ``# BASE:``, ``# STRUCTURE:``, ``# INITIAL:``), the
           parser, :class:`NetlistError` ("FILE:LINE: message")
library    element types (code, nodes, parameters, equations) and the jitted
           ``element_eval`` dispatching on an int type id
assembly   ``Network``, ``build_network``, jitted ``assemble`` (residual + Jacobian with
           chain-rule coefficients), ``chain_coefficients``, ``state_from_z``
implicit   the seed's integrator: ``predict``, ``newton_correct``, ``local_error``,
           ``step_rule``, ``implicit_step``, ``implicit_run``; ``PARAMS`` (its
           parameters as :class:`solvers.spec.Param`), ``pack_implicit_params``
simulate   ``simulate`` and ``SimulationResult``

Documentation: ``docs/reference/elements.md`` (format, element table, chain rule, step rule, the
seed's inconsistencies and the reading implemented).

References
----------
Seed 003 (PRADIS tutorial, sections 2–3); docs/explanation/methods.md#implicit;
docs/explanation/models.md#network.
"""

from mbstudy.solvers.elements.assembly import (
    VAR_A,
    VAR_V,
    VAR_X,
    VARIABLES,
    Network,
    assemble,
    build_network,
    chain_coefficients,
    state_from_z,
)
from mbstudy.solvers.elements.implicit import PARAMS, implicit_run, pack_implicit_params
from mbstudy.solvers.elements.library import ELEMENT_TYPES, ElementType, element_eval, eval_element
from mbstudy.solvers.elements.netlist import (
    Element,
    InitialValue,
    Netlist,
    NetlistError,
    load_netlist,
    parse_netlist,
)
from mbstudy.solvers.elements.simulate import SimulationResult, element_flow, simulate

__all__ = [
    "ELEMENT_TYPES",
    "PARAMS",
    "VARIABLES",
    "VAR_A",
    "VAR_V",
    "VAR_X",
    "Element",
    "ElementType",
    "InitialValue",
    "Netlist",
    "NetlistError",
    "Network",
    "SimulationResult",
    "assemble",
    "build_network",
    "chain_coefficients",
    "element_eval",
    "element_flow",
    "eval_element",
    "implicit_run",
    "load_netlist",
    "pack_implicit_params",
    "parse_netlist",
    "simulate",
    "state_from_z",
]
