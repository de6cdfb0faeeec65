"""Running work at scale, below both evaluation (``bench``) and dataset building (``dataset``):
shards and their files (:mod:`.shards`), the Ray session and tasks (:mod:`.ray_backend`) and
rate limits shared by concurrent workers (:mod:`.ratelimit`)."""
