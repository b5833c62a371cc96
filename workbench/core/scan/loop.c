/* The C loop of a Scan whose body is a compiled C Program (see run.py).
 *
 *   run_loop(run, name, start, n, in_rows, out_rows, cond_cell) -> (status, step, output)
 *
 * `run` is the body's Program.run (a C method: calling it adds no Python frame).
 * `in_rows`: tuple of (cell, array, offset): before step t the cell holds row offset + t
 * of the array (a sequence row, or a tap of a recurrent buffer). The row is one view
 * made before the loop whose data pointer moves from step to step: no object is made
 * per step. `out_rows`: tuple of (cell, array, offset): after step t the cell's value
 * is copied into row offset + t of the array (the loop's buffers, C-contiguous), unless
 * it is that row already (an accumulator the body updated in place). A value that is a
 * view into another output's row about to be written (`lambda a, b: (a + b, a)` in a
 * ring: b's value is a's previous row) is copied before any row is written; a fresh
 * value (no base) is never copied.
 * Row numbers wrap around the array's length (a ring: a loop keeping its last row).
 * `cond_cell`: the body's until() condition, or None.
 *
 * Returns (0, steps_run, -1), or (1, step, output) when output's value at that step
 * does not have the row's shape (run.py then raises the ScanError naming them). An
 * exception in the body gets the note "(in loop NAME at step T)".
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <string.h>

typedef struct {
    PyObject *cell;       /* borrowed (held by the rows tuple) */
    PyArrayObject *view;  /* owned: one row of `array`, its data pointer moved per step */
    char *base;
    npy_intp stride;
    Py_ssize_t offset, rows;
    int contiguous;       /* the row's bytes are one block (for memcpy) */
} Row;

static void free_rows(Row *rows, Py_ssize_t n) {
    if (!rows) return;
    for (Py_ssize_t k = 0; k < n; k++) Py_XDECREF(rows[k].view);
    PyMem_Free(rows);
}

static int make_rows(PyObject *spec, Row **out, Py_ssize_t *count) {
    if (!PyTuple_Check(spec)) {
        PyErr_SetString(PyExc_TypeError, "rows must be a tuple of (cell, array, offset)");
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(spec);
    Row *rows = PyMem_Calloc(n ? n : 1, sizeof(Row));
    if (!rows) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *item = PyTuple_GET_ITEM(spec, k), *cell, *array;
        Py_ssize_t offset;
        if (!PyArg_ParseTuple(item, "O!O!n", &PyList_Type, &cell, &PyArray_Type, &array,
                              &offset) || PyList_GET_SIZE(cell) != 1) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "a row's cell must be a one-element list");
            free_rows(rows, n);
            return -1;
        }
        PyArrayObject *a = (PyArrayObject *)array;
        if (PyArray_NDIM(a) < 1) {
            PyErr_SetString(PyExc_ValueError, "a row's array needs a leading dimension");
            free_rows(rows, n);
            return -1;
        }
        PyArray_Descr *descr = PyArray_DESCR(a);
        Py_INCREF(descr);
        PyObject *view = PyArray_NewFromDescr(
            &PyArray_Type, descr, PyArray_NDIM(a) - 1, PyArray_DIMS(a) + 1,
            PyArray_STRIDES(a) + 1, PyArray_BYTES(a), PyArray_FLAGS(a) & NPY_ARRAY_WRITEABLE,
            NULL);
        if (!view) { free_rows(rows, n); return -1; }
        Py_INCREF(array);
        if (PyArray_SetBaseObject((PyArrayObject *)view, array) < 0) {
            Py_DECREF(view);
            free_rows(rows, n);
            return -1;
        }
        rows[k].cell = cell;
        rows[k].view = (PyArrayObject *)view;
        rows[k].base = PyArray_BYTES(a);
        rows[k].stride = PyArray_STRIDES(a)[0];
        rows[k].offset = offset;
        rows[k].rows = PyArray_DIM(a, 0);
        rows[k].contiguous = PyArray_IS_C_CONTIGUOUS((PyArrayObject *)view);
    }
    *out = rows;
    *count = n;
    return 0;
}

static inline char *row_data(Row *r, Py_ssize_t t) {
    Py_ssize_t row = r->offset + t;
    if (row >= r->rows) row %= r->rows;  /* a ring of rows (a loop keeping its last row) */
    return r->base + row * r->stride;
}

static inline void move_row(Row *r, Py_ssize_t t) {
    ((PyArrayObject_fields *)r->view)->data = row_data(r, t);
}

/* The bytes [*lo, *hi) that an array with these dims and strides at `data` may touch. */
static void byte_bounds(int nd, npy_intp *dims, npy_intp *strides, char *data,
                        npy_intp itemsize, char **lo, char **hi) {
    *lo = data;
    *hi = data + itemsize;
    for (int d = 0; d < nd; d++) {
        if (dims[d] == 0) { *hi = *lo; return; }
        npy_intp extent = strides[d] * (dims[d] - 1);
        if (extent > 0) *hi += extent; else *lo += extent;
    }
}

/* Whether the view `v` may overlap row t of `r`. */
static int overlaps_row(PyArrayObject *v, Row *r, Py_ssize_t t) {
    char *vlo, *vhi, *rlo, *rhi;
    byte_bounds(PyArray_NDIM(v), PyArray_DIMS(v), PyArray_STRIDES(v), PyArray_BYTES(v),
                PyArray_ITEMSIZE(v), &vlo, &vhi);
    byte_bounds(PyArray_NDIM(r->view), PyArray_DIMS(r->view), PyArray_STRIDES(r->view),
                row_data(r, t), PyArray_ITEMSIZE(r->view), &rlo, &rhi);
    return vlo < vhi && rlo < rhi && vlo < rhi && rlo < vhi;
}

static int same_shape(PyArrayObject *value, PyArrayObject *row) {
    int nd = PyArray_NDIM(row);
    if (PyArray_NDIM(value) != nd) return 0;
    for (int d = 0; d < nd; d++)
        if (PyArray_DIM(value, d) != PyArray_DIM(row, d)) return 0;
    return 1;
}

static void add_step_note(PyObject *name, Py_ssize_t t) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value) {
        if (tb) PyException_SetTraceback(value, tb);
        PyObject *note = PyUnicode_FromFormat("(in loop %R at step %zd)", name, t);
        PyObject *res = note ? PyObject_CallMethod(value, "add_note", "N", note) : NULL;
        if (!res) PyErr_Clear();
        Py_XDECREF(res);
    }
    PyErr_Restore(type, value, tb);
}

static PyObject *run_loop(PyObject *self, PyObject *args) {
    PyObject *run, *name, *in_spec, *out_spec, *cond_cell;
    Py_ssize_t start, n;
    if (!PyArg_ParseTuple(args, "OUnnO!O!O", &run, &name, &start, &n, &PyTuple_Type, &in_spec,
                          &PyTuple_Type, &out_spec, &cond_cell))
        return NULL;
    Row *ins = NULL, *outs = NULL;
    Py_ssize_t n_in = 0, n_out = 0;
    if (make_rows(in_spec, &ins, &n_in) < 0) return NULL;
    if (make_rows(out_spec, &outs, &n_out) < 0) { free_rows(ins, n_in); return NULL; }
    PyObject *result = NULL;
    PyObject **values = PyMem_Calloc(n_out ? n_out : 1, sizeof(PyObject *));
    Py_ssize_t t = start, done = n;
    if (!values) { PyErr_NoMemory(); goto finish; }
    for (Py_ssize_t k = 0; k < n_in; k++) {  /* the cells hold the moving rows */
        move_row(&ins[k], start);
        Py_INCREF(ins[k].view);
        if (PyList_SetItem(ins[k].cell, 0, (PyObject *)ins[k].view) < 0) goto finish;
    }
    for (t = start; t < n; t++) {
        for (Py_ssize_t k = 0; k < n_in; k++) move_row(&ins[k], t);
        PyObject *res = PyObject_CallNoArgs(run);
        if (!res) { add_step_note(name, t); goto finish; }
        Py_DECREF(res);
        for (Py_ssize_t j = 0; j < n_out; j++) {  /* the values, shapes checked */
            PyObject *value = PyList_GET_ITEM(outs[j].cell, 0);
            if (!PyArray_Check(value)) {  /* (a numpy scalar from a Python node) */
                values[j] = PyArray_FROM_O(value);
                if (!values[j]) goto finish;
            } else {
                Py_INCREF(value);
                values[j] = value;
            }
            if (!same_shape((PyArrayObject *)values[j], outs[j].view)) {
                result = Py_BuildValue("(inn)", 1, t, j);
                goto finish;
            }
        }
        for (Py_ssize_t j = 0; j < n_out; j++) {  /* views into another row: copied */
            PyArrayObject *v = (PyArrayObject *)values[j];
            if (PyArray_BASE(v) == NULL) continue;
            for (Py_ssize_t k = 0; k < n_out; k++) {
                if (k == j || !overlaps_row(v, &outs[k], t)) continue;
                PyObject *copy = PyArray_NewCopy(v, NPY_CORDER);
                if (!copy) goto finish;
                Py_SETREF(values[j], copy);
                break;
            }
        }
        for (Py_ssize_t j = 0; j < n_out; j++) {
            Row *r = &outs[j];
            PyArrayObject *v = (PyArrayObject *)values[j];
            int status = 0;
            if (PyArray_DATA(v) == row_data(r, t) && PyArray_IS_C_CONTIGUOUS(v) &&
                r->contiguous && PyArray_EquivTypes(PyArray_DESCR(v), PyArray_DESCR(r->view))) {
                /* already in place: the body updated the row itself (an accumulator) */
            } else if (r->contiguous && PyArray_IS_C_CONTIGUOUS(v) &&
                PyArray_EquivTypes(PyArray_DESCR(v), PyArray_DESCR(r->view))) {
                memcpy(row_data(r, t), PyArray_DATA(v), PyArray_NBYTES(v));
            } else {
                move_row(r, t);
                status = PyArray_CopyInto(r->view, v);
            }
            Py_CLEAR(values[j]);
            if (status < 0) goto finish;
        }
        if (cond_cell != Py_None) {
            int stop = PyObject_IsTrue(PyList_GET_ITEM(cond_cell, 0));
            if (stop < 0) goto finish;
            if (stop) { done = t + 1; break; }
        }
    }
    result = Py_BuildValue("(inn)", 0, done, (Py_ssize_t)-1);
finish:
    for (Py_ssize_t k = 0; k < n_in; k++) {  /* no cell keeps a row that moved */
        Py_INCREF(Py_None);
        PyList_SetItem(ins[k].cell, 0, Py_None);
    }
    if (values)
        for (Py_ssize_t j = 0; j < n_out; j++) Py_XDECREF(values[j]);
    PyMem_Free(values);
    free_rows(ins, n_in);
    free_rows(outs, n_out);
    return result;
}

static PyMethodDef methods[] = {
    {"run_loop", run_loop, METH_VARARGS,
     "run_loop(run, name, start, n, in_rows, out_rows, cond_cell) -> (status, step, output)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef loop_module = {
    PyModuleDef_HEAD_INIT, "workbench_scan_loop", "the C loop of Scan", -1, methods,
};

PyMODINIT_FUNC PyInit_workbench_scan_loop(void) {
    import_array();
    return PyModule_Create(&loop_module);
}
