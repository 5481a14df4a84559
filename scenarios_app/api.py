"""The scenarios_app REST router: list, read, upsert, delete and validate scenarios."""

from ninja import Router

router = Router()
