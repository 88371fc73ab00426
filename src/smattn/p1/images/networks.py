"""Names of the image task's trained networks (docs/p1_images.md#network-seeds).

A network is an architecture (``L2H4``, ``L3H3``, ``L2H8``: layers and heads) trained with the settings of the active
scale from one seed. The run's main network of an architecture carries the architecture's name and the scale's seed
(``gd_seed``); a network of the same architecture trained from another seed ``k`` is named ``<architecture>-seed<k>``.
The seed decides everything the training draws: the initial weights, the frozen label vectors, the task batches.
"""

from __future__ import annotations

import re

#: layers and heads of each architecture, the names the rule files, costs and claims use
ARCHITECTURES = {"L2H4": (2, 4), "L3H3": (3, 3), "L2H8": (2, 8)}
SEED_SEP = "-seed"
_NAME = re.compile(rf"^(?P<arch>{'|'.join(ARCHITECTURES)})(?:{SEED_SEP}(?P<seed>\d+))?$")


def _match(name: str) -> re.Match:
    m = _NAME.match(str(name))
    if m is None:
        raise ValueError(
            f"{name!r} is not an image-task network: expected one of {sorted(ARCHITECTURES)}, optionally followed by "
            f"'{SEED_SEP}<k>' (the same architecture trained from seed k)"
        )
    return m


def network_name(arch: str, seed: int | None = None) -> str:
    """The name of ``arch`` trained from ``seed``; ``None``: the run's main network of ``arch``."""
    _match(arch)
    return arch if seed is None else f"{arch}{SEED_SEP}{int(seed)}"


def architecture(name: str) -> str:
    """The architecture of network ``name`` (``L3H3-seed43`` -> ``L3H3``)."""
    return _match(name)["arch"]


def network_seed(name: str, main_seed: int) -> int:
    """The training seed of network ``name``: its own, or ``main_seed`` for an architecture's main network."""
    seed = _match(name)["seed"]
    return int(main_seed) if seed is None else int(seed)


def layers_heads(name: str) -> tuple[int, int]:
    """(layers, heads per layer) of network ``name``."""
    return ARCHITECTURES[architecture(name)]
