/* Optional accelerator for ssemock.sse: the "simple blocks" scanner, in C.
 *
 * ssemock.sse._py_blocks (pure Python) is the reference: on a chunk without CR this computes
 * exactly what it does, and also takes CRLF-ended blocks (the pure code leaves a chunk with a
 * CR to the decoder's line loop); tests/test_sse.py checks both, and the decoder with each
 * against the spec, on random streams. Nothing
 * else lives here: the decoder's state machine (BOM, CR at a chunk end, partial lines, retry,
 * comments, unknown fields) stays in Python, and a block this scanner does not take is left
 * to it untouched.
 *
 * blocks(chunk, pos, last_id, events) -> (pos, last_id)
 *   From chunk[pos:], at the start of a block with empty buffers, append to `events` one
 *   ServerSentEvent per whole block of the shape
 *       ["id: " ID EOL] ["event: " TYPE EOL] "data: " DATA EOL EOL
 *   (EOL: LF or CRLF; ID without NUL; no other CR in a line), and stop at the first block of
 *   any other shape or not complete in the chunk. Returns the offset after the last block
 *   taken and the last event ID in effect there.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include "structmember.h"

typedef struct {
    PyTypeObject *cls;      /* ssemock.sse.ServerSentEvent */
    Py_ssize_t off[4];      /* slot offsets of event, data, id, retry */
    PyObject *message;      /* "message" */
} State;

static State state;

/* Where the line starting at p ends (its LF, or the CR of its CRLF), with the length of its
 * line ending in *eol; NULL when the line is not complete in [p, end) or holds a CR that is
 * not its CRLF's. */
static const char *
line_end(const char *p, const char *end, Py_ssize_t *eol)
{
    const char *lf = memchr(p, '\n', end - p);
    if (lf == NULL) {
        return NULL;
    }
    const char *cr = memchr(p, '\r', lf - p);
    if (cr == NULL) {
        *eol = 1;
        return lf;
    }
    if (cr + 1 != lf) {
        return NULL;
    }
    *eol = 2;
    return cr;
}

static int
starts(const char *p, const char *end, const char *prefix, Py_ssize_t n)
{
    return end - p >= n && memcmp(p, prefix, n) == 0;
}

static PyObject *
blocks(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyBytes_CheckExact(args[0]) || !PyLong_CheckExact(args[1])
            || !PyUnicode_CheckExact(args[2]) || !PyList_CheckExact(args[3])) {
        PyErr_SetString(PyExc_TypeError, "blocks(chunk: bytes, pos: int, last_id: str, events: list)");
        return NULL;
    }
    if (state.cls == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ssemock._speedups.init() was not called");
        return NULL;
    }
    const char *base = PyBytes_AS_STRING(args[0]);
    const char *end = base + PyBytes_GET_SIZE(args[0]);
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    if (start == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (start < 0 || start > end - base) {
        PyErr_SetString(PyExc_ValueError, "pos out of range");
        return NULL;
    }
    PyObject *events = args[3];
    PyObject *last_id = Py_NewRef(args[2]);
    PyObject *kind = NULL;                 /* the latest decoded type, reused while it repeats */
    const char *kind_at = NULL;
    Py_ssize_t kind_len = 0;
    const char *p = base + start;

    while (p < end) {
        const char *q = p;
        const char *id_at = NULL, *type_at = NULL, *data_at, *e;
        Py_ssize_t id_len = 0, type_len = 0, data_len, eol;

        if (starts(q, end, "id: ", 4)) {
            if ((e = line_end(q + 4, end, &eol)) == NULL) {
                break;
            }
            id_at = q + 4;
            id_len = e - id_at;
            if (memchr(id_at, '\0', id_len) != NULL) {
                break;
            }
            q = e + eol;
        }
        if (starts(q, end, "event: ", 7)) {
            if ((e = line_end(q + 7, end, &eol)) == NULL) {
                break;
            }
            type_at = q + 7;
            type_len = e - type_at;
            q = e + eol;
        }
        if (!starts(q, end, "data: ", 6) || (e = line_end(q + 6, end, &eol)) == NULL) {
            break;
        }
        data_at = q + 6;
        data_len = e - data_at;
        q = e + eol;
        if (q < end && *q == '\n') {
            q += 1;
        }
        else if (end - q >= 2 && q[0] == '\r' && q[1] == '\n') {
            q += 2;
        }
        else {
            break;
        }

        /* A whole block: build its event. */
        PyObject *type;
        if (type_at == NULL || type_len == 0) {
            type = Py_NewRef(state.message);
        }
        else if (kind != NULL && kind_len == type_len && memcmp(kind_at, type_at, type_len) == 0) {
            type = Py_NewRef(kind);
        }
        else {
            type = PyUnicode_DecodeUTF8(type_at, type_len, "replace");
            if (type == NULL) {
                goto error;
            }
            Py_XSETREF(kind, Py_NewRef(type));
            kind_at = type_at;
            kind_len = type_len;
        }
        if (id_at != NULL) {
            PyObject *ident = PyUnicode_DecodeUTF8(id_at, id_len, "replace");
            if (ident == NULL) {
                Py_DECREF(type);
                goto error;
            }
            Py_SETREF(last_id, ident);
        }
        PyObject *data = PyUnicode_DecodeUTF8(data_at, data_len, "replace");
        if (data == NULL) {
            Py_DECREF(type);
            goto error;
        }
        PyObject *ev = state.cls->tp_alloc(state.cls, 0);
        if (ev == NULL) {
            Py_DECREF(type);
            Py_DECREF(data);
            goto error;
        }
        char *slots = (char *)ev;
        *(PyObject **)(slots + state.off[0]) = type;
        *(PyObject **)(slots + state.off[1]) = data;
        *(PyObject **)(slots + state.off[2]) = Py_NewRef(last_id);
        *(PyObject **)(slots + state.off[3]) = Py_NewRef(Py_None);
        int failed = PyList_Append(events, ev);
        Py_DECREF(ev);
        if (failed) {
            goto error;
        }
        p = q;
    }
    Py_XDECREF(kind);
    PyObject *result = Py_BuildValue("(nN)", (Py_ssize_t)(p - base), last_id);
    return result;

error:
    Py_XDECREF(kind);
    Py_DECREF(last_id);
    return NULL;
}

static PyObject *
init(PyObject *module, PyObject *cls)
{
    static const char *names[4] = {"event", "data", "id", "retry"};
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "init(ServerSentEvent): a class");
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)cls;
    for (int i = 0; i < 4; i++) {
        PyObject *descr = PyDict_GetItemString(type->tp_dict, names[i]);
        if (descr == NULL || !PyObject_TypeCheck(descr, &PyMemberDescr_Type)) {
            PyErr_Format(PyExc_TypeError, "init(): %s is not a slot of the class", names[i]);
            return NULL;
        }
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type != T_OBJECT_EX) {
            PyErr_Format(PyExc_TypeError, "init(): slot %s holds no object", names[i]);
            return NULL;
        }
        state.off[i] = member->offset;
    }
    Py_XSETREF(state.cls, (PyTypeObject *)Py_NewRef(cls));
    if (state.message == NULL && (state.message = PyUnicode_InternFromString("message")) == NULL) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"blocks", (PyCFunction)(void (*)(void))blocks, METH_FASTCALL,
     "blocks(chunk, pos, last_id, events) -> (pos, last_id): the whole simple blocks at chunk[pos:]."},
    {"init", init, METH_O, "init(ServerSentEvent): the class whose slots blocks() fills."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "ssemock._speedups",
    "Optional C accelerator for ssemock.sse (same results as its pure-Python code).", -1, methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    return PyModule_Create(&module);
}
