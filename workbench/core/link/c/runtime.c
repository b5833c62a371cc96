/* workbench's C runtime: how compiled nodes are called.
 *
 * Every compiled Apply node is a function
 *     int fn(PyObject **ins, PyObject **outs, const char *const *labels)
 * exported by an extension module as a PyCapsule named "workbench.node/2".
 * `ins[i]` are borrowed references to the input values; `outs[j]` are owned
 * references to the previous output values (or NULL): the node may reuse them and
 * leaves an owned reference to the new value there. `labels` name the node (0), its
 * inputs and its outputs in messages, then give each input's expected Type and its
 * static lengths (codegen.node_labels: 1 + 3 n_in + n_out strings): they are data the
 * node prints with %s or checks against, never part of its C source. It returns 0, or -1 with a Python
 * exception set.
 *
 * This module gives two ways of running such functions over the storage cells
 * (one-element lists) of the Python VM:
 *   NodeThunk(capsule, in_cells, out_cells, labels)   one node, callable with no argument
 *   Program(steps, clear_cells, on_error[, overwrite_cells, guard_cells])
 *                                             a whole graph in a C loop:
 *       steps: tuple of (fn_or_callable, in_cells, out_cells, free_cells, labels);
 *       a capsule runs as a node function, any other callable is called with no
 *       argument (a Python thunk that reads and writes its cells itself; its labels
 *       are ignored).
 *   FastCall(...)                            a compiled Function's call path (below)
 *       Program.run() clears `clear_cells`, runs every step, and after each step
 *       empties `free_cells` (intermediates nobody needs any more). On failure it
 *       calls on_error(exception, step_index) so Python can annotate the error.
 *       `overwrite_cells` are output cells whose previous value (an ndarray owning its
 *       data) the node may overwrite although the caller still holds it (outputs lent
 *       with Out(borrow=True)); before each run such a value is dropped if it is, or is
 *       the base of, a value in `guard_cells` (the graph's inputs), so a result passed
 *       back in is never written while it is read.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <time.h>

typedef int (*wb_node_fn)(PyObject **ins, PyObject **outs, const char *const *labels);

#define WB_MAX_ARITY 64
#define WB_NODE_CAPSULE "workbench.node/2"

static wb_node_fn node_fn_of(PyObject *capsule) {
    if (!PyCapsule_CheckExact(capsule)) return NULL;
    return (wb_node_fn)PyCapsule_GetPointer(capsule, WB_NODE_CAPSULE);
}

/* The C strings of `labels` (a tuple of at least n bytes objects, which must outlive
 * them: the node, its inputs, its outputs, its inputs' Types and static lengths, then
 * its Op's run-time parameters), in a new PyMem array; NULL with an exception when it
 * is not such a tuple. */
static const char **label_array(PyObject *labels, Py_ssize_t n) {
    if (!PyTuple_Check(labels) || PyTuple_GET_SIZE(labels) < n) {
        PyErr_Format(PyExc_TypeError, "labels must be a tuple of at least %zd bytes objects "
                     "(the node, its inputs, its outputs, its inputs' Types and static "
                     "lengths, then its Op's run-time parameters)", n);
        return NULL;
    }
    n = PyTuple_GET_SIZE(labels);
    const char **array = PyMem_Calloc(n ? n : 1, sizeof(char *));
    if (!array) { PyErr_NoMemory(); return NULL; }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *item = PyTuple_GET_ITEM(labels, k);
        if (!PyBytes_Check(item)) {
            PyMem_Free(array);
            PyErr_Format(PyExc_TypeError, "labels[%zd] must be bytes", k);
            return NULL;
        }
        array[k] = PyBytes_AS_STRING(item);
    }
    return array;
}

/* numpy's public array and descr layouts, without numpy's headers */
typedef struct {
    PyObject_HEAD
    char *data;
    int nd;
    Py_ssize_t *dimensions, *strides;
    PyObject *base, *descr;
    int flags;
} wb_array_head;
typedef struct {
    PyObject_HEAD
    PyTypeObject *typeobj;
    char kind, type, byteorder, _former_flags;
    int type_num;
} wb_descr_head;

static PyTypeObject *ndarray_type = NULL;

static inline int owns_its_data(PyObject *value) {
    return ndarray_type != NULL && Py_TYPE(value) == ndarray_type &&
           ((wb_array_head *)value)->base == NULL;
}

/* Only a value nobody else holds may be reused as output storage: another holder
 * (the caller, a view's base, a list) would see it change. A lent cell's value (`lent`:
 * Out(borrow=True), whose caller agreed to that) may be reused while the caller holds it,
 * when it is an ndarray owning its data (never a view of something else). */
static inline PyObject *take_output(PyObject *cell, int lent) {
    PyObject *value = PyList_GET_ITEM(cell, 0);
    if (value == Py_None) return NULL;
    if (Py_REFCNT(value) != 1 && !(lent && owns_its_data(value))) return NULL;
    /* Move the cell's reference into the node: the cell holds None meanwhile. */
    Py_INCREF(Py_None);
    PyList_SET_ITEM(cell, 0, Py_None);
    return value;
}

static inline void put_output(PyObject *cell, PyObject *value) {
    PyObject *old = PyList_GET_ITEM(cell, 0);
    PyList_SET_ITEM(cell, 0, value ? value : (Py_INCREF(Py_None), Py_None));
    Py_XDECREF(old);
}

static int run_node(wb_node_fn fn, const char *const *labels, Py_ssize_t n_in,
                    PyObject *const *in_cells, Py_ssize_t n_out, PyObject *const *out_cells,
                    const char *lent) {
    PyObject *ins[WB_MAX_ARITY];
    PyObject *outs[WB_MAX_ARITY];
    PyObject **in_buf = ins, **out_buf = outs;
    if (n_in > WB_MAX_ARITY || n_out > WB_MAX_ARITY) {
        in_buf = PyMem_Malloc(sizeof(PyObject *) * (n_in + 1));
        out_buf = PyMem_Malloc(sizeof(PyObject *) * (n_out + 1));
        if (!in_buf || !out_buf) { PyMem_Free(in_buf); PyMem_Free(out_buf); PyErr_NoMemory(); return -1; }
    }
    /* None is a legitimate value (e.g. NoneConst, a Generic); a TensorType's
     * c_extract refuses it with a TypeError naming the input. */
    for (Py_ssize_t i = 0; i < n_in; i++) in_buf[i] = PyList_GET_ITEM(in_cells[i], 0);
    for (Py_ssize_t j = 0; j < n_out; j++)
        out_buf[j] = take_output(out_cells[j], lent != NULL && lent[j]);
    int status = fn(in_buf, out_buf, labels);
    for (Py_ssize_t j = 0; j < n_out; j++) put_output(out_cells[j], out_buf[j]);
    if (in_buf != ins) { PyMem_Free(in_buf); PyMem_Free(out_buf); }
    if (status != 0 && !PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "a compiled node failed without setting an error");
    return status != 0 ? -1 : 0;
}

static int check_cells(PyObject *cells, const char *what) {
    if (!PyTuple_Check(cells)) {
        PyErr_Format(PyExc_TypeError, "%s must be a tuple of one-element lists", what);
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(cells); i++) {
        PyObject *c = PyTuple_GET_ITEM(cells, i);
        if (!PyList_CheckExact(c) || PyList_GET_SIZE(c) != 1) {
            PyErr_Format(PyExc_TypeError, "%s[%zd] must be a one-element list", what, i);
            return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ NodeThunk */

typedef struct {
    PyObject_HEAD
    PyObject *capsule;
    PyObject *in_cells;   /* tuple of lists */
    PyObject *out_cells;  /* tuple of lists */
    PyObject *labels;     /* tuple of bytes */
    const char **label_ptrs;
    wb_node_fn fn;
} NodeThunk;

/* The runtime's objects hold Python objects that may lead back to them (a cell's
 * value, a Python thunk, a Function's bound method): they take part in the cycle
 * collector, or a compiled Function and its buffers would never be freed. */
static int NodeThunk_traverse(NodeThunk *self, visitproc visit, void *arg) {
    Py_VISIT(self->capsule);
    Py_VISIT(self->in_cells);
    Py_VISIT(self->out_cells);
    Py_VISIT(self->labels);
    return 0;
}

static int NodeThunk_clear(NodeThunk *self) {
    self->fn = NULL;  /* a cleared thunk refuses to run */
    PyMem_Free(self->label_ptrs);
    self->label_ptrs = NULL;
    Py_CLEAR(self->capsule);
    Py_CLEAR(self->in_cells);
    Py_CLEAR(self->out_cells);
    Py_CLEAR(self->labels);
    return 0;
}

static void NodeThunk_dealloc(NodeThunk *self) {
    PyObject_GC_UnTrack(self);
    NodeThunk_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int NodeThunk_init(NodeThunk *self, PyObject *args, PyObject *kwds) {
    PyObject *capsule, *in_cells, *out_cells, *labels;
    if (!PyArg_ParseTuple(args, "OO!O!O", &capsule, &PyTuple_Type, &in_cells,
                          &PyTuple_Type, &out_cells, &labels))
        return -1;
    wb_node_fn fn = node_fn_of(capsule);
    if (!fn) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "NodeThunk needs a '" WB_NODE_CAPSULE "' capsule");
        return -1;
    }
    if (check_cells(in_cells, "in_cells") < 0 || check_cells(out_cells, "out_cells") < 0)
        return -1;
    const char **label_ptrs = label_array(
        labels, 1 + 3 * PyTuple_GET_SIZE(in_cells) + PyTuple_GET_SIZE(out_cells));
    if (!label_ptrs) return -1;
    Py_INCREF(capsule); Py_INCREF(in_cells); Py_INCREF(out_cells); Py_INCREF(labels);
    Py_XSETREF(self->capsule, capsule);
    Py_XSETREF(self->in_cells, in_cells);
    Py_XSETREF(self->out_cells, out_cells);
    Py_XSETREF(self->labels, labels);
    PyMem_Free(self->label_ptrs);
    self->label_ptrs = label_ptrs;
    self->fn = fn;
    return 0;
}

static PyObject *NodeThunk_call(NodeThunk *self, PyObject *args, PyObject *kwds) {
    if (!self->fn) { PyErr_SetString(PyExc_RuntimeError, "NodeThunk not initialised"); return NULL; }
    if (run_node(self->fn, self->label_ptrs, PyTuple_GET_SIZE(self->in_cells),
                 &PyTuple_GET_ITEM(self->in_cells, 0), PyTuple_GET_SIZE(self->out_cells),
                 &PyTuple_GET_ITEM(self->out_cells, 0), NULL) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyTypeObject NodeThunkType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "workbench_runtime.NodeThunk",
    .tp_basicsize = sizeof(NodeThunk),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)NodeThunk_init,
    .tp_dealloc = (destructor)NodeThunk_dealloc,
    .tp_traverse = (traverseproc)NodeThunk_traverse,
    .tp_clear = (inquiry)NodeThunk_clear,
    .tp_call = (ternaryfunc)NodeThunk_call,
    .tp_doc = "NodeThunk(capsule, in_cells, out_cells, labels): run one compiled node on "
              "its cells.",
};

/* -------------------------------------------------------------------- Program */

typedef struct {
    wb_node_fn fn;        /* NULL: call `callable` */
    const char **labels;  /* owned array of strings borrowed from Program.steps */
    char *lent;           /* owned: 1 per output cell in overwrite_cells (NULL: none) */
    PyObject *callable;   /* borrowed from Program.steps */
    Py_ssize_t n_in, n_out, n_free;
    PyObject **in_cells, **out_cells, **free_cells;  /* borrowed from Program.steps */
} Step;

typedef struct {
    PyObject_HEAD
    PyObject *steps;       /* the tuple given: keeps everything alive */
    PyObject *clear_cells; /* tuple of lists emptied before each run */
    PyObject *on_error;    /* callable(exc, index) or None */
    PyObject *overwrite;   /* tuple of lent output cells (see take_output) */
    PyObject *guard;       /* tuple of the graph's input cells */
    Step *step;
    Py_ssize_t n_steps;
} Program;

static void free_steps(Step *step, Py_ssize_t n) {
    if (!step) return;
    for (Py_ssize_t k = 0; k < n; k++) { PyMem_Free(step[k].labels); PyMem_Free(step[k].lent); }
    PyMem_Free(step);
}

static int Program_traverse(Program *self, visitproc visit, void *arg) {
    Py_VISIT(self->steps);
    Py_VISIT(self->clear_cells);
    Py_VISIT(self->on_error);
    Py_VISIT(self->overwrite);
    Py_VISIT(self->guard);
    return 0;
}

static int Program_clear(Program *self) {
    /* the steps borrow from `steps`: they go first, leaving a program of no step */
    free_steps(self->step, self->n_steps);
    self->step = NULL;
    self->n_steps = 0;
    Py_CLEAR(self->steps);
    Py_CLEAR(self->clear_cells);
    Py_CLEAR(self->on_error);
    Py_CLEAR(self->overwrite);
    Py_CLEAR(self->guard);
    return 0;
}

/* 1 per output cell of `outs` that is one of `overwrite`'s cells, in a new PyMem array;
 * NULL when none is (or on failure, with an exception: check PyErr_Occurred). */
static char *lent_flags(PyObject *outs, PyObject *overwrite) {
    Py_ssize_t n = PyTuple_GET_SIZE(outs), found = 0;
    if (PyTuple_GET_SIZE(overwrite) == 0 || n == 0) return NULL;
    char *flags = PyMem_Calloc(n, 1);
    if (!flags) { PyErr_NoMemory(); return NULL; }
    for (Py_ssize_t j = 0; j < n; j++)
        for (Py_ssize_t c = 0; c < PyTuple_GET_SIZE(overwrite); c++)
            if (PyTuple_GET_ITEM(outs, j) == PyTuple_GET_ITEM(overwrite, c)) {
                flags[j] = 1;
                found = 1;
            }
    if (!found) { PyMem_Free(flags); return NULL; }
    return flags;
}

static void Program_dealloc(Program *self) {
    PyObject_GC_UnTrack(self);
    Program_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Program_init(Program *self, PyObject *args, PyObject *kwds) {
    PyObject *steps, *clear_cells, *on_error, *overwrite = NULL, *guard = NULL;
    if (!PyArg_ParseTuple(args, "O!O!O|O!O!", &PyTuple_Type, &steps, &PyTuple_Type,
                          &clear_cells, &on_error, &PyTuple_Type, &overwrite, &PyTuple_Type,
                          &guard))
        return -1;
    PyObject *empty = PyTuple_New(0);
    if (!empty) return -1;
    if (!overwrite) overwrite = empty;
    if (!guard) guard = empty;
    if (check_cells(clear_cells, "clear_cells") < 0 ||
        check_cells(overwrite, "overwrite_cells") < 0 || check_cells(guard, "guard_cells") < 0) {
        Py_DECREF(empty);
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(steps);
    Step *step = PyMem_Calloc(n ? n : 1, sizeof(Step));
    if (!step) { PyErr_NoMemory(); Py_DECREF(empty); return -1; }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *item = PyTuple_GET_ITEM(steps, k);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 5) {
            PyErr_Format(PyExc_TypeError, "step %zd must be a tuple (fn, in_cells, out_cells, "
                         "free_cells, labels)", k);
            free_steps(step, n);
            Py_DECREF(empty);
            return -1;
        }
        PyObject *fn = PyTuple_GET_ITEM(item, 0);
        PyObject *ins = PyTuple_GET_ITEM(item, 1), *outs = PyTuple_GET_ITEM(item, 2),
                 *frees = PyTuple_GET_ITEM(item, 3);
        if (check_cells(ins, "in_cells") < 0 || check_cells(outs, "out_cells") < 0 ||
            check_cells(frees, "free_cells") < 0) { free_steps(step, n); Py_DECREF(empty); return -1; }
        if (PyCapsule_CheckExact(fn)) {
            step[k].fn = node_fn_of(fn);
            if (!step[k].fn) { free_steps(step, n); Py_DECREF(empty); return -1; }
            step[k].labels = label_array(PyTuple_GET_ITEM(item, 4),
                                         1 + 3 * PyTuple_GET_SIZE(ins) + PyTuple_GET_SIZE(outs));
            step[k].lent = step[k].labels ? lent_flags(outs, overwrite) : NULL;
            if (!step[k].labels || PyErr_Occurred()) {
                free_steps(step, n); Py_DECREF(empty); return -1;
            }
        } else if (PyCallable_Check(fn)) {
            step[k].callable = fn;
        } else {
            PyErr_Format(PyExc_TypeError, "step %zd: fn must be a node capsule or a callable", k);
            free_steps(step, n);
            Py_DECREF(empty);
            return -1;
        }
        step[k].n_in = PyTuple_GET_SIZE(ins);
        step[k].n_out = PyTuple_GET_SIZE(outs);
        step[k].n_free = PyTuple_GET_SIZE(frees);
        step[k].in_cells = step[k].n_in ? &PyTuple_GET_ITEM(ins, 0) : NULL;
        step[k].out_cells = step[k].n_out ? &PyTuple_GET_ITEM(outs, 0) : NULL;
        step[k].free_cells = step[k].n_free ? &PyTuple_GET_ITEM(frees, 0) : NULL;
    }
    free_steps(self->step, self->n_steps);
    self->step = step;
    self->n_steps = n;
    Py_INCREF(steps); Py_INCREF(clear_cells); Py_INCREF(on_error);
    Py_INCREF(overwrite); Py_INCREF(guard);
    Py_XSETREF(self->steps, steps);
    Py_XSETREF(self->clear_cells, clear_cells);
    Py_XSETREF(self->on_error, on_error);
    Py_XSETREF(self->overwrite, overwrite);
    Py_XSETREF(self->guard, guard);
    Py_DECREF(empty);
    return 0;
}

static void report_error(Program *self, Py_ssize_t k) {
    if (self->on_error == NULL || self->on_error == Py_None) return;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value && tb) PyException_SetTraceback(value, tb);
    PyObject *res = PyObject_CallFunction(self->on_error, "On", value ? value : Py_None, k);
    if (res == NULL) PyErr_Clear();  /* the handler failed: keep the original error */
    Py_XDECREF(res);
    PyErr_Restore(type, value, tb);
}

/* Empty each lent cell whose value is, or is the base of, a value of a guard cell (a
 * result passed back in as an input, or set as a shared variable's value). */
static void drop_guarded(PyObject *overwrite, PyObject *guard) {
    if (overwrite == NULL || guard == NULL) return;
    for (Py_ssize_t c = 0; c < PyTuple_GET_SIZE(overwrite); c++) {
        PyObject *cell = PyTuple_GET_ITEM(overwrite, c);
        PyObject *value = PyList_GET_ITEM(cell, 0);
        if (value == Py_None) continue;
        for (Py_ssize_t g = 0; g < PyTuple_GET_SIZE(guard); g++) {
            PyObject *held = PyList_GET_ITEM(PyTuple_GET_ITEM(guard, g), 0);
            if (held == value || (ndarray_type != NULL && Py_TYPE(held) == ndarray_type &&
                                  ((wb_array_head *)held)->base == value)) {
                put_output(cell, NULL);
                break;
            }
        }
    }
}

static int program_run(Program *self) {
    PyObject *clear = self->clear_cells;
    if (clear == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Program not initialised (or already freed)");
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(clear); i++)
        put_output(PyTuple_GET_ITEM(clear, i), NULL);
    drop_guarded(self->overwrite, self->guard);
    Step *step = self->step;
    for (Py_ssize_t k = 0; k < self->n_steps; k++) {
        Step *s = &step[k];
        if (s->fn) {
            if (run_node(s->fn, s->labels, s->n_in, s->in_cells, s->n_out, s->out_cells,
                         s->lent) < 0) {
                report_error(self, k);
                return -1;
            }
        } else {
            PyObject *res = PyObject_CallNoArgs(s->callable);
            if (res == NULL) { report_error(self, k); return -1; }
            Py_DECREF(res);
        }
        for (Py_ssize_t f = 0; f < s->n_free; f++) put_output(s->free_cells[f], NULL);
    }
    return 0;
}

static PyObject *Program_run(Program *self, PyObject *unused) {
    if (program_run(self) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef Program_methods[] = {
    {"run", (PyCFunction)Program_run, METH_NOARGS, "Run every step once."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ProgramType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "workbench_runtime.Program",
    .tp_basicsize = sizeof(Program),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Program_init,
    .tp_dealloc = (destructor)Program_dealloc,
    .tp_traverse = (traverseproc)Program_traverse,
    .tp_clear = (inquiry)Program_clear,
    .tp_methods = Program_methods,
    .tp_doc = "Program(steps, clear_cells, on_error): a linked graph run by a C loop.",
};

/* ------------------------------------------------------------------- FastCall */
/* FastCall(program, arg_cells, arg_checks, out_cells, update_pairs, single, trust, slow):
 * the whole call of a compiled Function in C. Arguments that are exactly what the
 * Function's filter would pass through unchanged (an ndarray of the input's dtype,
 * rank and static lengths, in native byte order) go straight into their cells; any
 * other call (keywords, wrong count, a value needing conversion or an error message)
 * goes to `slow`, the Function's Python path, so behaviour is identical. */

typedef struct {
    PyObject_HEAD
    Program *program;
    PyObject *arg_cells, *out_cells, *update_pairs, *slow;
    Py_ssize_t n_args;
    int *type_num, *ndim;        /* type_num -1: never accepted here */
    Py_ssize_t *shape;           /* n_args * WB_MAX_ARITY lengths, -1: any */
    int single, trust;
    vectorcallfunc vectorcall;
} FastCall;



/* `slow` is a bound method of the Function that holds this object: a cycle only the
 * collector can free. */
static int FastCall_traverse(FastCall *self, visitproc visit, void *arg) {
    Py_VISIT(self->program);
    Py_VISIT(self->arg_cells);
    Py_VISIT(self->out_cells);
    Py_VISIT(self->update_pairs);
    Py_VISIT(self->slow);
    return 0;
}

static int FastCall_clear(FastCall *self) {
    Py_CLEAR(self->program);
    Py_CLEAR(self->arg_cells);
    Py_CLEAR(self->out_cells);
    Py_CLEAR(self->update_pairs);
    Py_CLEAR(self->slow);
    return 0;
}

static void FastCall_dealloc(FastCall *self) {
    PyObject_GC_UnTrack(self);
    FastCall_clear(self);
    PyMem_Free(self->type_num);
    PyMem_Free(self->ndim);
    PyMem_Free(self->shape);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static inline int quick_accept(FastCall *self, Py_ssize_t i, PyObject *value) {
    int type_num = self->type_num[i];
    if (type_num < 0 || Py_TYPE(value) != ndarray_type) return 0;
    wb_array_head *a = (wb_array_head *)value;
    wb_descr_head *descr = (wb_descr_head *)a->descr;
    if (descr->type_num != type_num || a->nd != self->ndim[i] || descr->byteorder == '>')
        return 0;
    const Py_ssize_t *want = &self->shape[i * WB_MAX_ARITY];
    for (int d = 0; d < a->nd; d++)
        if (want[d] >= 0 && want[d] != a->dimensions[d]) return 0;
    return 1;
}

static PyObject *FastCall_vcall(PyObject *obj, PyObject *const *args, size_t nargsf,
                                PyObject *kwnames) {
    FastCall *self = (FastCall *)obj;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), n = self->n_args;
    if (self->program == NULL || self->slow == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "FastCall used after it was freed");
        return NULL;
    }
    int slow = (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0) || nargs != n;
    for (Py_ssize_t i = 0; !slow && !self->trust && i < n; i++)
        if (!quick_accept(self, i, args[i])) slow = 1;
    if (slow) return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_INCREF(args[i]);
        put_output(PyTuple_GET_ITEM(self->arg_cells, i), args[i]);
    }
    if (program_run(self->program) < 0) return NULL;
    PyObject *ups = self->update_pairs;
    for (Py_ssize_t u = 0; u < PyTuple_GET_SIZE(ups); u++) {
        PyObject *pair = PyTuple_GET_ITEM(ups, u);
        PyObject *value = PyList_GET_ITEM(PyTuple_GET_ITEM(pair, 0), 0);
        Py_INCREF(value);
        put_output(PyTuple_GET_ITEM(pair, 1), value);
    }
    PyObject *outs = self->out_cells;
    if (self->single) {
        PyObject *value = PyList_GET_ITEM(PyTuple_GET_ITEM(outs, 0), 0);
        Py_INCREF(value);
        return value;
    }
    Py_ssize_t m = PyTuple_GET_SIZE(outs);
    PyObject *result = PyList_New(m);
    if (!result) return NULL;
    for (Py_ssize_t j = 0; j < m; j++) {
        PyObject *value = PyList_GET_ITEM(PyTuple_GET_ITEM(outs, j), 0);
        Py_INCREF(value);
        PyList_SET_ITEM(result, j, value);
    }
    return result;
}

static PyTypeObject ProgramType;

static PyObject *FastCall_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *program, *arg_cells, *checks, *out_cells, *update_pairs, *slow;
    int single, trust;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!ppO", &ProgramType, &program, &PyTuple_Type,
                          &arg_cells, &PyTuple_Type, &checks, &PyTuple_Type, &out_cells,
                          &PyTuple_Type, &update_pairs, &single, &trust, &slow))
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(arg_cells);
    if (check_cells(arg_cells, "arg_cells") < 0 || check_cells(out_cells, "out_cells") < 0)
        return NULL;
    if (PyTuple_GET_SIZE(checks) != n || (single && PyTuple_GET_SIZE(out_cells) != 1)) {
        PyErr_SetString(PyExc_ValueError, "FastCall: one check per argument, one output "
                        "cell when single");
        return NULL;
    }
    for (Py_ssize_t u = 0; u < PyTuple_GET_SIZE(update_pairs); u++) {
        PyObject *pair = PyTuple_GET_ITEM(update_pairs, u);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 ||
            check_cells(pair, "update pair") < 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "update pairs are (source cell, target cell)");
            return NULL;
        }
    }
    if (!PyCallable_Check(slow)) {
        PyErr_SetString(PyExc_TypeError, "FastCall: slow must be callable");
        return NULL;
    }
    FastCall *self = (FastCall *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->vectorcall = FastCall_vcall;
    self->type_num = PyMem_Calloc(n ? n : 1, sizeof(int));
    self->ndim = PyMem_Calloc(n ? n : 1, sizeof(int));
    self->shape = PyMem_Calloc((n ? n : 1) * WB_MAX_ARITY, sizeof(Py_ssize_t));
    Py_INCREF(program); Py_INCREF(arg_cells); Py_INCREF(out_cells);
    Py_INCREF(update_pairs); Py_INCREF(slow);
    self->program = (Program *)program;
    self->arg_cells = arg_cells;
    self->out_cells = out_cells;
    self->update_pairs = update_pairs;
    self->slow = slow;
    self->n_args = n;
    self->single = single;
    self->trust = trust;
    if (!self->type_num || !self->ndim || !self->shape) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *check = PyTuple_GET_ITEM(checks, i);
        self->type_num[i] = -1;
        if (check == Py_None) continue;
        int tn, nd;
        PyObject *shp;
        if (!PyArg_ParseTuple(check, "iiO!", &tn, &nd, &PyTuple_Type, &shp) ||
            nd > WB_MAX_ARITY || PyTuple_GET_SIZE(shp) != nd) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "a check is (type_num, ndim, shape)");
            Py_DECREF(self);
            return NULL;
        }
        self->type_num[i] = tn;
        self->ndim[i] = nd;
        for (int d = 0; d < nd; d++) {
            PyObject *want = PyTuple_GET_ITEM(shp, d);
            self->shape[i * WB_MAX_ARITY + d] = want == Py_None ? -1 : PyLong_AsSsize_t(want);
        }
    }
    return (PyObject *)self;
}

static PyTypeObject FastCallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "workbench_runtime.FastCall",
    .tp_basicsize = sizeof(FastCall),
    .tp_vectorcall_offset = offsetof(FastCall, vectorcall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
    .tp_new = FastCall_new,
    .tp_dealloc = (destructor)FastCall_dealloc,
    .tp_traverse = (traverseproc)FastCall_traverse,
    .tp_clear = (inquiry)FastCall_clear,
    .tp_call = PyVectorcall_Call,
    .tp_doc = "FastCall(program, arg_cells, arg_checks, out_cells, update_pairs, single, "
              "trust, slow): a compiled Function's call path in C.",
};

static struct PyModuleDef runtime_module = {
    PyModuleDef_HEAD_INIT, "workbench_runtime", "workbench's C runtime", -1, NULL,
};

PyMODINIT_FUNC PyInit_workbench_runtime(void) {
    PyObject *numpy = PyImport_ImportModule("numpy");
    if (!numpy) return NULL;
    ndarray_type = (PyTypeObject *)PyObject_GetAttrString(numpy, "ndarray");
    Py_DECREF(numpy);
    if (!ndarray_type) return NULL;
    if (PyType_Ready(&NodeThunkType) < 0 || PyType_Ready(&ProgramType) < 0 ||
        PyType_Ready(&FastCallType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&runtime_module);
    if (!m) return NULL;
    Py_INCREF(&NodeThunkType);
    Py_INCREF(&ProgramType);
    Py_INCREF(&FastCallType);
    if (PyModule_AddObject(m, "NodeThunk", (PyObject *)&NodeThunkType) < 0 ||
        PyModule_AddObject(m, "Program", (PyObject *)&ProgramType) < 0 ||
        PyModule_AddObject(m, "FastCall", (PyObject *)&FastCallType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
