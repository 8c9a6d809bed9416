-- wrk script for bench/serve.py: GET /health with the token, the HTTP
-- layer's own floor.
wrk.headers["X-Access-Token"] = os.getenv("CELLEXEC_TOKEN")
