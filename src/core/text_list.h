/* A list of items for a sentence ("a, b, c"), in a fixed buffer: an item that does not
 * fit ends it with ", ..." (the caller gives the count beside it). */
#ifndef SC_CORE_TEXT_LIST_H
#define SC_CORE_TEXT_LIST_H

#include <stdio.h>
#include <string.h>

typedef struct {
    char *buf;
    size_t len;
    size_t n;   /* characters written */
    int cut;    /* ", ..." written: later items are left out */
} sc_text_list_t;

static inline void sc_text_list_init(sc_text_list_t *l, char *buf, size_t len)
{
    *l = (sc_text_list_t){buf, len, 0, 0};
    buf[0] = '\0';
}

/* Appends item after ", " (none before the first), or ", ..." where it would not leave
 * room for that. */
static inline void sc_text_list_add(sc_text_list_t *l, const char *item)
{
    const char *sep = l->n ? ", " : "";

    if (l->cut)
        return;
    if (l->n + strlen(sep) + strlen(item) + sizeof(", ...") <= l->len) {
        l->n += (size_t)snprintf(l->buf + l->n, l->len - l->n, "%s%s", sep, item);
    } else {
        snprintf(l->buf + l->n, l->len - l->n, ", ...");
        l->cut = 1;
    }
}

#endif
