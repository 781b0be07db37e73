"""Debian's torchrun, with the one fix each Debian release needs and nothing else.

    python3 tests/py/torchrun.py --nproc_per_node 2 --no_python build/trainrun recipe.yaml

Debian 12 (python3-torch 1.13, Python 3.11): `torchrun` crashes before starting any worker. torch
1.13's Std.from_str("0") looks the value up by iterating over the IntFlag Std, and Python 3.11 no
longer yields the zero member NONE, so the default `--redirects 0` parses to None and to_map()
fails with "AttributeError: 'NoneType' object has no attribute 'get'". The fix maps such a None
back to Std.NONE. Debian 13's torch 2.6 parses it (under Python 3.13): there the fix never acts.

Debian 13 (python3-torch 2.6, Python 3.13): `torchrun` fails before starting any worker with
"use_libuv was requested but PyTorch was build without libuv support". Its agent makes its
TCPStore (static_tcp_rendezvous.py; c10d_rendezvous_backend.py and dynamic_rendezvous.py for
--standalone / --rdzv-backend c10d) without passing use_libuv, so the binding's default True applies whatever USE_LIBUV says
(pytorch#148283), and Debian builds torch without libuv. The fix passes what the rest of
torch.distributed passes (rendezvous.py, elastic/utils/distributed.py: USE_LIBUV, default "1") and,
when USE_LIBUV is not set and this torch has no libuv, the classic server: the choice trainrun's
own rank 0 makes (README, "The rendezvous store"). Debian 12's torch has no use_libuv: there this
fix never acts.

Python workers under that torchrun fail the same way in init_process_group("gloo"): their client of
the agent's store is made without use_libuv too, and USE_LIBUV=0 does not reach it. A worker that
imports this module (bench/py/common.py does) gets the same fix.

Then torch.distributed.run runs exactly as `python3 -m torch.distributed.run` does.
"""
import os
import sys

import torch.distributed as dist
from torch.distributed.elastic.multiprocessing import api

_from_str = api.Std.from_str


def _from_str_311(vm):
    parsed = _from_str(vm)
    if parsed is None:
        return api.Std.NONE
    if isinstance(parsed, dict):
        return {k: api.Std.NONE if v is None else v for k, v in parsed.items()}
    return parsed


api.Std.from_str = _from_str_311


class _AgentTCPStore(dist.TCPStore):
    def __init__(self, *args, **kwargs):
        if "use_libuv" in kwargs:
            super().__init__(*args, **kwargs)
            return
        asked = os.environ.get("USE_LIBUV")
        try:
            super().__init__(*args, use_libuv=(asked or "1") == "1", **kwargs)
            return
        except RuntimeError as e:
            if asked is not None or "without libuv support" not in str(e):
                raise
        super().__init__(*args, use_libuv=False, **kwargs)


if "use_libuv" in (dist.TCPStore.__init__.__doc__ or ""):
    from torch.distributed.elastic.rendezvous import c10d_rendezvous_backend, static_tcp_rendezvous

    # static (torchrun's default), c10d (--standalone, --rdzv-backend c10d) and the agent's shared
    # store (dynamic_rendezvous.py calls dist.TCPStore); and in a Python worker that imports this
    # module (bench/py/common.py), the client that init_process_group("gloo") makes of the agent's
    # store (rendezvous.py's _create_c10d_store, also without use_libuv under torchrun).
    static_tcp_rendezvous.TCPStore = c10d_rendezvous_backend.TCPStore = dist.TCPStore = _AgentTCPStore
    sys.modules["torch.distributed.rendezvous"].TCPStore = _AgentTCPStore  # the module: the package's `rendezvous` is its function

if __name__ == "__main__":
    from torch.distributed.run import main

    sys.exit(main())
