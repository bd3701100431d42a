"""A Claim with a stable id, until issue 21's anatomy.probes.claims.Claim (which has one) is
on main: then this module goes and claims.py imports Claim from anatomy.probes.claims.

    Claim(claim, expected, measured, verdict, detail="", id="context_length/...")

as_dict() puts the id first, as issue 21's does; claims_json / claims_markdown take it as any
other Claim.
"""

import dataclasses

from anatomy.probes import claims as _claims


@dataclasses.dataclass(frozen=True)
class Claim(_claims.Claim):
    id: str = ""  # "<experiment>/<name>": what a report row or a published block cites

    def as_dict(self) -> dict:
        fields = dataclasses.asdict(self)
        cid = fields.pop("id")
        return {"id": cid, **fields} if cid else fields
