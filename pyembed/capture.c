/* pyembed/capture.c: sys.stdout and sys.stderr while cells run.
 *
 * sys.stdout is one object for the whole process, but several threads may
 * run cells at once.  So instead of one capture object per call, while any
 * cell runs sys.stdout and sys.stderr are routers: a write goes to the cell
 * the writing thread runs, else to the cell that started the writing thread
 * while it runs (dropped once it has ended), else to the cell started last,
 * else to sys.__stdout__ / sys.__stderr__ (see running.c).  Written in C because
 * print() calls write() twice per line: this is the hot path of a cell.
 *
 * Text goes into the result as UTF-8; lone surrogates from undecodable
 * bytes (surrogateescape) go back to those bytes.  Bytes written to
 * sys.stdout.buffer are kept as given.  What went to fds 1 and 2 directly
 * (fdcapture.c) is appended first at each write, to keep the order.
 */
#include "config.h"

#include "pyembed/pyembed-private.h"

typedef struct {
  PyObject_HEAD
  int fd;              /* 1: stdout, 2: stderr */
  PyObject *buffer;    /* text streams: their binary stream; binary ones: NULL */
} CaptureStream;

static PyObject *unsupported_operation; /* io.UnsupportedOperation */
static PyObject *text_streams[3];       /* [1], [2]: the routers */
static PyObject *saved_streams[3];      /* what sys.stdout / sys.stderr were */
static unsigned capture_users;          /* cells between begin and end; GIL-protected */
/* Threads cells started, still alive (GIL-protected).  While there are
 * any, the routers stay installed after the last cell ends, to drop what
 * those threads write (on the host's stdout it could corrupt what the host
 * prints there, say `cellexec run --json`); everybody else's writes go on to
 * the streams the routers stand in for. */
static unsigned cell_threads;
static gboolean installed;              /* the routers are sys.stdout / sys.stderr */

static const char *const stream_names[3] = { NULL, "stdout", "stderr" };
static const char *const original_names[3] = { NULL, "__stdout__", "__stderr__" };

static void
append_to_cell(cx__py_cell *cell, int fd, const char *data, Py_ssize_t size)
{
  /* What reached fds 1 and 2 before this write comes first. */
  cx__py_fdcapture_deliver(cell);
  cx__py_note_stream(cell, fd);
  if (fd == 1)
    cx_result_append_stdout(cell->result, data, size);
  else
    cx_result_append_stderr(cell->result, data, size);
}

/* Calls sys.__stdout__.write(DATA) (or .buffer.write for BINARY): output
 * nobody runs a cell for.  Without such a stream, the data is dropped. */
static PyObject *
forward(CaptureStream *self, const char *method, PyObject *data)
{
  /* With no cell running, the routers stand in for the host's streams. */
  PyObject *target = capture_users == 0 ? saved_streams[self->fd]
                                        : PySys_GetObject(original_names[self->fd]); /* borrowed */
  if (target == NULL || target == Py_None)
    return data != NULL ? PyLong_FromSsize_t(PyObject_Length(data)) : Py_NewRef(Py_None);
  Py_INCREF(target);
  if (self->buffer == NULL) { /* a binary stream */
    Py_SETREF(target, PyObject_GetAttrString(target, "buffer"));
    if (target == NULL)
      return NULL;
  }
  PyObject *value = data != NULL ? PyObject_CallMethod(target, method, "O", data)
                                 : PyObject_CallMethod(target, method, NULL);
  Py_DECREF(target);
  return value;
}

static PyObject *
text_write(CaptureStream *self, PyObject *text)
{
  if (!PyUnicode_Check(text))
    return PyErr_Format(PyExc_TypeError, "write() argument must be str, not %.100s",
                        Py_TYPE(text)->tp_name);
  cx__py_cell *cell = cx__py_output_cell();
  if (cell == NULL)
    return cx__py_output_orphaned() ? PyLong_FromSsize_t(PyUnicode_GET_LENGTH(text))
                                         : forward(self, "write", text);

  Py_ssize_t size;
  const char *utf8 = PyUnicode_AsUTF8AndSize(text, &size);
  if (utf8 != NULL) {
    append_to_cell(cell, self->fd, utf8, size);
  } else {
    /* Surrogates: bytes decoded with surrogateescape, or worse. */
    PyErr_Clear();
    PyObject *encoded = PyUnicode_AsEncodedString(text, "utf-8", "surrogateescape");
    if (encoded == NULL) {
      PyErr_Clear();
      encoded = PyUnicode_AsEncodedString(text, "utf-8", "backslashreplace");
      if (encoded == NULL)
        return NULL;
    }
    append_to_cell(cell, self->fd, PyBytes_AS_STRING(encoded), PyBytes_GET_SIZE(encoded));
    Py_DECREF(encoded);
  }
  return PyLong_FromSsize_t(PyUnicode_GET_LENGTH(text));
}

static PyObject *
binary_write(CaptureStream *self, PyObject *data)
{
  cx__py_cell *cell = cx__py_output_cell();
  if (cell == NULL && !cx__py_output_orphaned())
    return forward(self, "write", data);
  Py_buffer view;
  if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
    return NULL;
  if (cell == NULL) { /* dropped: see text_write */
    PyObject *written = PyLong_FromSsize_t(view.len);
    PyBuffer_Release(&view);
    return written;
  }
  append_to_cell(cell, self->fd, view.buf, view.len);
  PyObject *written = PyLong_FromSsize_t(view.len);
  PyBuffer_Release(&view);
  return written;
}

static PyObject *
stream_writelines(CaptureStream *self, PyObject *lines)
{
  PyObject *iterator = PyObject_GetIter(lines);
  if (iterator == NULL)
    return NULL;
  PyObject *line;
  while ((line = PyIter_Next(iterator)) != NULL) {
    PyObject *written = self->buffer != NULL ? text_write(self, line) : binary_write(self, line);
    Py_DECREF(line);
    if (written == NULL)
      break;
    Py_DECREF(written);
  }
  Py_DECREF(iterator);
  return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
}

static PyObject *
stream_flush(CaptureStream *self, PyObject *unused)
{
  /* Captured output is in the result already.  Output forwarded to the
   * process's own stream is flushed when the cell ends, or here: a process
   * a cell forked ends no cell, and flushes before os._exit(). */
  if (cx__py_output_cell() == NULL && !cx__py_output_orphaned()) {
    PyObject *done = forward(self, "flush", NULL);
    if (done == NULL)
      PyErr_Clear(); /* a closed or broken stdout is the host's business */
    Py_XDECREF(done);
  }
  return Py_NewRef(Py_None);
}

static PyObject *
stream_fileno(CaptureStream *self, PyObject *unused)
{
  if (capture_users == 0 && !cx__py_output_orphaned())
    return forward(self, "fileno", NULL); /* standing in for the host's stream */
  PyErr_SetString(unsupported_operation,
                  "a cell's output stream is captured and has no file descriptor; "
                  "use sys.__stdout__ / sys.__stderr__ for the process's own");
  return NULL;
}

static PyObject *return_false(PyObject *self, PyObject *unused) { return Py_NewRef(Py_False); }
static PyObject *return_true(PyObject *self, PyObject *unused) { return Py_NewRef(Py_True); }

static PyObject *
stream_repr(CaptureStream *self)
{
  return PyUnicode_FromFormat("<cellexec captured %s%s>", stream_names[self->fd],
                              self->buffer != NULL ? "" : " (binary)");
}

static PyObject *
get_name(CaptureStream *self, void *unused)
{
  return PyUnicode_FromFormat("<%s>", stream_names[self->fd]);
}

static PyObject *
get_buffer(CaptureStream *self, void *unused)
{
  return Py_NewRef(self->buffer);
}

static PyObject *get_false(PyObject *self, void *unused) { return Py_NewRef(Py_False); }
static PyObject *get_none(PyObject *self, void *unused) { return Py_NewRef(Py_None); }
static PyObject *get_encoding(PyObject *self, void *unused) { return PyUnicode_FromString("utf-8"); }
static PyObject *get_errors(PyObject *self, void *unused) { return PyUnicode_FromString("strict"); }
static PyObject *get_text_mode(PyObject *self, void *unused) { return PyUnicode_FromString("w"); }
static PyObject *get_binary_mode(PyObject *self, void *unused) { return PyUnicode_FromString("wb"); }

#define COMMON_METHODS                                                              \
  { "writelines", (PyCFunction)stream_writelines, METH_O, NULL },                   \
  { "flush", (PyCFunction)stream_flush, METH_NOARGS, NULL },                        \
  { "close", (PyCFunction)stream_flush, METH_NOARGS, "does nothing: cells share the stream" }, \
  { "fileno", (PyCFunction)stream_fileno, METH_NOARGS, NULL },                      \
  { "isatty", return_false, METH_NOARGS, NULL },                                    \
  { "readable", return_false, METH_NOARGS, NULL },                                  \
  { "seekable", return_false, METH_NOARGS, NULL },                                  \
  { "writable", return_true, METH_NOARGS, NULL }

static PyMethodDef text_methods[] = {
  { "write", (PyCFunction)text_write, METH_O, "Append text to the running cell's output." },
  COMMON_METHODS,
  { NULL }
};

static PyMethodDef binary_methods[] = {
  { "write", (PyCFunction)binary_write, METH_O, "Append bytes to the running cell's output." },
  COMMON_METHODS,
  { NULL }
};

#define COMMON_GETSET                                                               \
  { "name", (getter)get_name, NULL, NULL, NULL },                                   \
  { "closed", get_false, NULL, NULL, NULL }

static PyGetSetDef text_getset[] = {
  COMMON_GETSET,
  { "buffer", (getter)get_buffer, NULL, NULL, NULL },
  { "encoding", get_encoding, NULL, NULL, NULL },
  { "errors", get_errors, NULL, NULL, NULL },
  { "mode", get_text_mode, NULL, NULL, NULL },
  { "newlines", get_none, NULL, NULL, NULL },
  { "line_buffering", get_false, NULL, NULL, NULL },
  { NULL }
};

static PyGetSetDef binary_getset[] = {
  COMMON_GETSET,
  { "mode", get_binary_mode, NULL, NULL, NULL },
  { NULL }
};

static PyTypeObject text_stream_type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "cellexec.CapturedTextStream",
  .tp_basicsize = sizeof(CaptureStream),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "sys.stdout / sys.stderr while cells run: writes go to the running cell.",
  .tp_repr = (reprfunc)stream_repr,
  .tp_methods = text_methods,
  .tp_getset = text_getset,
};

static PyTypeObject binary_stream_type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "cellexec.CapturedBinaryStream",
  .tp_basicsize = sizeof(CaptureStream),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "sys.stdout.buffer while cells run: bytes go to the running cell as given.",
  .tp_repr = (reprfunc)stream_repr,
  .tp_methods = binary_methods,
  .tp_getset = binary_getset,
};

static PyObject *
new_stream(PyTypeObject *type, int fd, PyObject *buffer)
{
  CaptureStream *stream = PyObject_New(CaptureStream, type);
  if (stream != NULL) {
    stream->fd = fd;
    stream->buffer = buffer; /* reference taken over */
  }
  return (PyObject *)stream;
}

gboolean
cx__py_capture_init(void)
{
  if (PyType_Ready(&text_stream_type) < 0 || PyType_Ready(&binary_stream_type) < 0)
    return FALSE;
  PyObject *io = PyImport_ImportModule("io");
  if (io == NULL)
    return FALSE;
  unsupported_operation = PyObject_GetAttrString(io, "UnsupportedOperation");
  Py_DECREF(io);
  if (unsupported_operation == NULL)
    return FALSE;
  for (int fd = 1; fd <= 2; fd++) {
    PyObject *binary = new_stream(&binary_stream_type, fd, NULL);
    text_streams[fd] = binary != NULL ? new_stream(&text_stream_type, fd, binary) : NULL;
    if (text_streams[fd] == NULL)
      return FALSE;
  }
  return TRUE;
}

void
cx__py_capture_begin(void)
{
  for (int fd = 1; fd <= 2; fd++) {
    if (!installed)
      saved_streams[fd] = Py_XNewRef(PySys_GetObject(stream_names[fd]));
    /* Also when already installed: a cell may have replaced it since. */
    PySys_SetObject(stream_names[fd], text_streams[fd]);
  }
  installed = TRUE;
  capture_users++;
}

/* Nothing else flushes Python's own stdio: the interpreter is never
 * finalised.  Called after each cell, for output that went around the
 * routers (sys.__stdout__, threads when no cell ran). */
static void
flush_process_stdio(void)
{
  for (int fd = 1; fd <= 2; fd++) {
    PyObject *stream = PySys_GetObject(original_names[fd]); /* borrowed */
    if (stream == NULL || stream == Py_None)
      continue;
    PyObject *done = PyObject_CallMethod(stream, "flush", NULL);
    if (done == NULL)
      PyErr_Clear(); /* a closed or broken stdout is the host's business */
    Py_XDECREF(done);
  }
}

/* Give the host its streams back.  ONLY_OURS: where the host has not
 * replaced the routers since the last cell ended. */
static void
restore_streams(gboolean only_ours)
{
  for (int fd = 1; fd <= 2; fd++) {
    if (!only_ours || PySys_GetObject(stream_names[fd]) == text_streams[fd])
      PySys_SetObject(stream_names[fd], saved_streams[fd]);
    Py_CLEAR(saved_streams[fd]);
  }
  installed = FALSE;
}

void
cx__py_capture_end(void)
{
  if (--capture_users == 0) {
    if (cell_threads == 0) {
      restore_streams(FALSE);
    } else {
      /* Kept, and put back where the cell replaced them. */
      for (int fd = 1; fd <= 2; fd++)
        PySys_SetObject(stream_names[fd], text_streams[fd]);
    }
  }
  flush_process_stdio();
}

void
cx__py_capture_thread_begin(void)
{
  cell_threads++;
}

void
cx__py_capture_thread_end(void)
{
  if (--cell_threads == 0 && capture_users == 0 && installed)
    restore_streams(TRUE);
}
