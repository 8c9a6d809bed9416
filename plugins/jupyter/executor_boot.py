# The kernel side of the jupyter backend's executor operations, run once
# in a session's kernel (plugins/jupyter/session.c).  _cellexec_boot()
# loads pyembed's errors.py and executor.py (whose sources it is given) as
# modules and returns the helper the operations call as _cellexec_h.
#
# A host function is called over the stdin channel: input() sends an
# input_request whose prompt is HOST_CALL_PREFIX and the call as JSON; the
# host answers {"value": value} or {"error": message} (the replies of
# lib/peer_json.h), or
# {"nested": expression} when the host function calls back into this
# kernel first, whose answer goes back after NESTED_PREFIX.


def _cellexec_boot(errors_source, executor_source, host_call_prefix, nested_prefix):
    import json, sys, types

    def load(name, source):
        module = types.ModuleType(name)
        module.__file__ = '<' + name + '>'
        sys.modules[name] = module
        exec(compile(source, module.__file__, 'exec'), module.__dict__)
        return module

    load('_cellexec_errors', errors_source)

    class Helper:
        class Out:
            """An answer, ["ok", value] or ["error", ...], whose repr is its JSON."""

            def __init__(self, answer):
                self.text = json.dumps(list(answer))

            def __repr__(self):
                return self.text

        x = load('_cellexec_executor', executor_source)

        def __init__(self):
            self.executor = self.x.new_executor()
            self.envs = {}

        def env(self, i):
            if i not in self.envs:
                self.envs[i] = self.x.new_env(self.executor)
            return self.envs[i]

        def free(self, i):
            env = self.envs.pop(i, None)
            if env is not None:
                self.x.close_env(env)
            return ('ok', None)

        def call_host(self, function):
            def call(arguments):
                prompt = host_call_prefix + json.dumps({'function': function, 'arguments': arguments})
                while True:
                    answer = json.loads(input(prompt))
                    if 'nested' not in answer:
                        break
                    # The host function calls back into this kernel.
                    try:
                        text = self.Out(eval(answer['nested'], {'_cellexec_h': self})).text
                    except BaseException as e:
                        text = json.dumps(['error', type(e).__name__, str(e), '', 0])
                    prompt = nested_prefix + text
                if 'error' in answer:
                    raise RuntimeError(answer['error'])
                return json.dumps(answer['value'])
            return call

    return Helper()
