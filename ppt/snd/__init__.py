"""Split-N-Denoise: embeddings from a server-side model without sending text (floor 4).

The client embeds its tokens with the model's input-embedding table, adds d_chi noise (one Gamma(d, 1/eta)
radius per token vector times a uniform direction; ``ppt.samplers.dchi``) and clips to the largest
token-embedding norm; the server runs the rest of the model on those rows and pools; the client denoises
the answer with a small transformer trained on public data.

    split.py     SplitModel: the client half (tokenizer, input rows) and the server half (body + pooling)
    pipeline.py  one round for a batch (privatize, pool, denoise)
    denoiser.py  the denoiser network and its config
    train.py     training on a public corpus (fresh noise per epoch, checkpoints, resume)
    store.py     denoisers as cache artifacts or directories, checked on load
    privacy.py   what the stamp may claim
"""

from __future__ import annotations
