/* Declarations shared by the notebook files of the core; not installed. */
#ifndef CX_LIB_NOTEBOOK_INTERNAL_H
#define CX_LIB_NOTEBOOK_INTERNAL_H

#include <cellexec/cellexec.h>

struct cx_notebook {
  JsonNode *root;  /* the document, as read (an object with "cells") */
  char *origin;    /* for messages */
  char *path;      /* where it was loaded from, or NULL */
};

/* The "cells" array (borrowed). */
JsonArray *cx__notebook_cells(const cx_notebook *notebook);
/* nbformat_minor: 4.5 and later give every cell an "id". */
gint64 cx__notebook_minor(const cx_notebook *notebook);
/* A multiline string (a string, or a list of strings) as one string. */
char *cx__notebook_join_multiline(JsonNode *node);
/* OBJECT's member KEY when it is an object, else NULL (and NULL for a NULL
 * OBJECT). */
JsonObject *cx__notebook_member_object(JsonObject *object, const char *key);
/* TRUE when CELL's metadata.tags holds TAG. */
gboolean cx__notebook_cell_has_tag(JsonObject *cell, const char *tag);
/* A new random cell id, as nbformat makes them (8 hex digits). */
char *cx__notebook_new_cell_id(void);

#endif /* CX_LIB_NOTEBOOK_INTERNAL_H */
