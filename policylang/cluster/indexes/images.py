"""The nodes holding each image (the snapshot's ImageStates), from node objects alone."""

from __future__ import annotations

import functools

import numpy as np


class Images:
    def __init__(self, state) -> None:
        self.state = state
        self._masks: dict[str, np.ndarray] = {}

    def arrive(self, pod, node: str) -> None:
        pass

    def leave(self, pod, node: str) -> None:
        pass

    def nodes_with_image(self, name: str) -> list:
        """The nodes holding an image known by this name, in the order they reached the
        cluster (the dump's): the first of them gave the scheduler cache the image's size
        (addNodeImageStates, pkg/scheduler/backend/cache/cache.go), which every node's
        ImageLocality score then uses."""
        return self._holders.get(name, [])

    def holder_mask(self, name: str) -> np.ndarray:
        """Per node position, whether the node holds an image known by this name."""
        mask = self._masks.get(name)
        if mask is None:
            mask = self._masks[name] = np.zeros(len(self.state.node_index), dtype=bool)
            mask[self.state.positions(self.nodes_with_image(name))] = True
        return mask

    @functools.cached_property
    def _holders(self) -> dict[str, list]:
        holders: dict[str, list] = {}
        for node in self.state.nodes_as_arrived():
            for name in dict.fromkeys(name for image in node.status.images for name in image.names):
                holders.setdefault(name, []).append(node)
        return holders
