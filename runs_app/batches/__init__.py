"""OpenAI's Files and Batch APIs and Anthropic's Message Batches on the fake endpoint: the stored files and batches
(``models.py``), their rows read and written (``store.py``), a batch's lines played through the engine as the
synchronous endpoint plays a request (``play.py``), and the consumer that answers their paths (``consumer.py``)."""
