"""The project: settings, URLs, ASGI routing, the REST API's mount and kit, and helpers every page shares."""
