# The fork server's warm-up (plugins/subprocess/worker/worker_main.c), run
# once before any fork: the imports most cells pay for otherwise, then the
# --preload modules (checked to be dotted names by the host), each skipped
# when not installed.  With IPython preloaded, cells get its shell
# ready-made, but every stateless cell costs more (a larger process to
# fork).  Not asyncio: with the ssl and socket modules it pulls in, it
# doubles the server's resident size (10 to 19 MB), which every fork pays
# for, while only cells with top-level await need it (preload = asyncio
# brings it back).


def _cellexec_warm_up(preload):
    import collections, io, json, math, re, tokenize, traceback  # noqa: F401
    for name in preload.split(','):
        try:
            __import__(name.strip()) if name.strip() else None
        except ModuleNotFoundError:
            pass
    import gc
    # Objects made so far are never collected: collections would touch
    # them and copy their pages in every forked process.
    gc.freeze()
