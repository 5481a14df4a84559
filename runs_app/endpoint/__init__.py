"""The fake provider endpoint: the ASGI consumer that answers SDKs, and the recorder that writes runs and events."""
