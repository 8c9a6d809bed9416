# A Jupyter kernel that speaks the protocol badly, for tests/test_jupyter.c
# (run by the system interpreter, with pyzmq).
#
#   hostile_kernel.py MODE --write FILE   bind random ports, write FILE (attach)
#   hostile_kernel.py MODE -f FILE        bind the ports FILE gives (launched)
#
# It answers kernel_info_request as a kernel does; what it does with an
# execute_request depends on MODE:
#   lie      a forged stream, one for another parent, one that is not
#            JSON, a frame without delimiter, then the real output
#   die      exits
#   flood    ignores SIGINT and interrupt_request, and sends stream
#            output without end, never replying
#   hang     ignores SIGINT and interrupt_request, and never replies
#   late     replies at once, then sends output 3 s later, then idle
#   odd      outputs a front end cannot show (an unknown msg_type,
#            display_data without data or with data of wrong types, a
#            stream whose text is an object), then a reply whose status
#            is "bogus"
#   garbage  no kernel at all: every port accepts TCP connections and
#            answers them with bytes that are not ZMTP
import ctypes
import datetime
import hashlib
import hmac
import json
import os
import signal
import socket
import sys
import threading
import time
import uuid

mode, how, conn = sys.argv[1], sys.argv[2], sys.argv[3]
# Gone with the test that started it, even one that failed before its end.
ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
names = ('shell_port', 'iopub_port', 'stdin_port', 'control_port', 'hb_port')


def write_connection(ports, key):
    with open(conn + '.tmp', 'w') as f:
        json.dump(dict(zip(names, ports), ip='127.0.0.1', key=key, transport='tcp',
                       signature_scheme='hmac-sha256'), f)
    os.rename(conn + '.tmp', conn)


def garbage():
    def serve(listener):
        while True:
            peer, _ = listener.accept()
            try:
                peer.sendall(b'GET / HTTP/1.0\r\n\r\n' + b'\xff' * 64)
            except OSError:
                pass
    listeners = []
    for _ in names:
        listener = socket.socket()
        listener.bind(('127.0.0.1', 0))
        listener.listen(16)
        listeners.append(listener)
        threading.Thread(target=serve, args=(listener,), daemon=True).start()
    write_connection([s.getsockname()[1] for s in listeners], 'k')
    threading.Event().wait()


if mode == 'garbage':
    garbage()

import zmq  # noqa: E402  (the garbage mode needs no pyzmq)

ctx = zmq.Context()
if how == '-f':
    with open(conn) as f:
        info = json.load(f)
    key = info['key'].encode()
else:
    info = None
    key = uuid.uuid4().hex.encode()


def bind(kind, name):
    s = ctx.socket(kind)
    if info is None:
        return s, s.bind_to_random_port('tcp://127.0.0.1')
    s.bind('tcp://127.0.0.1:%d' % info[name])
    return s, info[name]


shell, sp = bind(zmq.ROUTER, 'shell_port')
iopub, ip = bind(zmq.PUB, 'iopub_port')
stdin, inp = bind(zmq.ROUTER, 'stdin_port')
control, cp = bind(zmq.ROUTER, 'control_port')
hb, hp = bind(zmq.REP, 'hb_port')
if info is None:
    write_connection([sp, ip, inp, cp, hp], key.decode())


def frames(msg_type, parent, content, raw=None, bad=False):
    header = json.dumps(dict(msg_id=uuid.uuid4().hex, msg_type=msg_type, session='s',
                             username='u', version='5.3',
                             date=datetime.datetime.utcnow().isoformat() + 'Z')).encode()
    parts = [header, json.dumps(parent).encode(), b'{}',
             raw if raw is not None else json.dumps(content).encode()]
    h = hmac.new(key, digestmod=hashlib.sha256)
    for p in parts:
        h.update(p)
    return [b'<IDS|MSG>', b'0' * 64 if bad else h.hexdigest().encode()] + parts


def pub(t, parent, content, **kw):
    iopub.send_multipart([t.encode()] + frames(t, parent, content, **kw))


def reply(sock, ids, t, parent, content):
    sock.send_multipart(ids + frames(t, parent, content))


def execute(sock, ids, header):
    if mode == 'die':
        os._exit(1)
    if mode == 'lie':
        pub('stream', header, {'name': 'stdout', 'text': 'FORGED\n'}, bad=True)
        pub('stream', dict(header, msg_id='someone-else'), {'name': 'stdout', 'text': 'OTHER\n'})
        pub('stream', header, None, raw=b'{not json')
        iopub.send_multipart([b'junk', b'no delimiter'])
        pub('stream', header, {'name': 'stdout', 'text': 'good\n'})
        status = 'ok'
    elif mode == 'flood':
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        line = {'name': 'stdout', 'text': 'flood ' * 10000 + '\n'}
        while True:
            pub('stream', header, line)
    elif mode == 'hang':
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        threading.Event().wait()
    elif mode == 'late':
        reply(sock, ids, 'execute_reply', header,
              {'status': 'ok', 'execution_count': 1, 'user_expressions': {}})
        time.sleep(3)
        pub('stream', header, {'name': 'stdout', 'text': 'late\n'})
        return
    elif mode == 'odd':
        pub('weird_type', header, {'something': 1})
        pub('display_data', header, {'metadata': {}})
        pub('display_data', header, {'data': ['not', 'a', 'bundle'], 'metadata': {}})
        pub('display_data', header, {'data': {'text/plain': 5, 'text/html': '<b>kept</b>'},
                                     'metadata': 'not an object'})
        pub('stream', header, {'name': 'stdout', 'text': {'not': 'text'}})
        pub('stream', header, {'name': 'stdout', 'text': 'good\n'})
        status = 'bogus'
    reply(sock, ids, 'execute_reply', header,
          {'status': status, 'execution_count': 1, 'user_expressions': {}})


def heartbeat():
    # A thread of its own, as in ipykernel: it beats while a cell runs.
    while True:
        hb.send(hb.recv())


threading.Thread(target=heartbeat, daemon=True).start()
poller = zmq.Poller()
for s in (shell, control):
    poller.register(s, zmq.POLLIN)
while True:
    for sock, _ in poller.poll():
        msg = sock.recv_multipart()
        i = msg.index(b'<IDS|MSG>')
        ids, header = msg[:i], json.loads(msg[i + 2])
        t = header['msg_type']
        pub('status', header, {'execution_state': 'busy'})
        if t == 'kernel_info_request':
            reply(sock, ids, 'kernel_info_reply', header, {'status': 'ok', 'protocol_version': '5.3'})
        elif t == 'execute_request':
            execute(sock, ids, header)
        pub('status', header, {'execution_state': 'idle'})
