"""Print constraints.txt: the exact installed versions of anatomy[test]'s dependency closure.

    python .ci/lock.py > constraints.txt

Walks the installed distributions' requirements from anatomy's own (with the `test` extra),
evaluating environment markers for this interpreter, so the file lists only what anatomy
needs, not whatever else the environment holds. Local version labels (torch's `+cpu`) are
dropped: `torch==2.13.0` matches the CPU wheel.
"""

from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def requirements(dist, extras):
    """The requirements of `dist` that apply with these extras on this interpreter."""
    out = []
    for text in dist.requires or []:
        req = Requirement(text)
        envs = [{"extra": e} for e in (set(extras) | {""})]
        if req.marker is None or any(req.marker.evaluate(env) for env in envs):
            out.append(req)
    return out


def closure(root="anatomy", extras=("test",)):
    versions, seen = {}, set()
    stack = [
        (req, tuple(sorted(req.extras)))
        for req in requirements(metadata.distribution(root), extras)
    ]
    while stack:
        req, req_extras = stack.pop()
        key = (canonicalize_name(req.name), req_extras)
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            continue  # an optional requirement this environment does not need
        versions[dist.metadata["Name"]] = dist.version.split("+")[0]
        stack += [(r, tuple(sorted(r.extras))) for r in requirements(dist, req_extras)]
    versions.pop("setuptools", None)  # a build requirement, resolved by pip's build isolation
    return versions


if __name__ == "__main__":
    print(
        "# The exact package set every test, benchmark and README number in this repository ran with:"
    )
    print("# the dependency closure of anatomy[test] (Python 3.11, Linux x86_64, CPU).")
    print('# Installed by .ci/run:  pip install -c constraints.txt -e ".[test]"')
    print("# Regenerate after an upgrade that passes CI: python .ci/lock.py > constraints.txt")
    for name, version in sorted(closure().items(), key=lambda kv: kv[0].lower()):
        print(f"{name}=={version}")
