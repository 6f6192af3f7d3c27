"""Which global ranks belong to each torch.distributed process group.

A collective's ProcessGroup argument tells the C++ hook the group's name, size
and this process's rank in it, but not which global ranks the group holds:
only Python keeps that (``dist.get_process_group_ranks``). So the functions
that create groups are wrapped to hand each new group's ranks to the hook,
and the group's collectives record them as ``group_ranks``
(docs/TRACE_FORMAT.md "Collectives"). Groups created otherwise (DeviceMesh
internals that bypass these functions) record no ``group_ranks``.
"""

from __future__ import annotations

_CREATORS = ("init_process_group", "new_group", "split_group")
_originals: dict = {}


def _note(hook, pg) -> None:
    import torch.distributed as dist

    name = getattr(pg, "group_name", None)
    if not name:
        return
    try:
        ranks = dist.get_process_group_ranks(pg)
    except Exception:  # not a member (GroupMember.NON_GROUP_MEMBER), or a torch without it
        return
    hook.note_process_group(str(name), [int(r) for r in ranks])


def install(hook) -> None:
    try:
        import torch.distributed as dist
        from torch.distributed import distributed_c10d
    except ImportError:
        return
    if not dist.is_available() or _originals:
        return
    for name in _CREATORS:
        original = getattr(distributed_c10d, name, None)
        if original is None:
            continue

        def wrapper(*args, __original=original, __name=name, **kwargs):
            result = __original(*args, **kwargs)
            try:
                pg = dist.group.WORLD if __name == "init_process_group" else result
                if pg is not None:
                    _note(hook, pg)
            except Exception:  # the program must not fail because magneton could not read a group
                pass
            return result

        wrapper.__wrapped__ = original
        wrapper.__doc__ = original.__doc__
        wrapper.__name__ = name
        _originals[name] = (original, getattr(dist, name, None) is original)
        setattr(distributed_c10d, name, wrapper)
        if _originals[name][1]:
            setattr(dist, name, wrapper)
    # Groups that exist already (recording started after init_process_group).
    try:
        if dist.is_initialized():
            for pg in list(distributed_c10d._world.pg_group_ranks):
                _note(hook, pg)
    except Exception:
        pass


def uninstall() -> None:
    if not _originals:
        return
    import torch.distributed as dist
    from torch.distributed import distributed_c10d

    for name, (original, on_dist) in _originals.items():
        setattr(distributed_c10d, name, original)
        if on_dist:
            setattr(dist, name, original)
    _originals.clear()
