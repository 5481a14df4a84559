"""The scenario editor: a form over the pydantic scenario model, validated as you type, with a raw JSON/YAML tab, a
preview of what the endpoint sends, and saving as a new version.

- :mod:`.fields`: the form's fields; posted form data ↔ form state.
- :mod:`.mapping`: form state ↔ scenario data; errors put on the field that caused them.
- :mod:`.binding`: a state bound to its errors for the templates; adding, moving and removing turns and items.
- :mod:`.raw`: the raw tab (JSON or YAML).
- :mod:`.panel`: an editor post read and validated; the panel partial's context.
- :mod:`.preview`: the preview of a turn, from the engine and the wire encoders.
- :mod:`.views`: the pages.

All but the last two are pure (no Django).
"""
