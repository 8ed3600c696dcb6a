/* A variable's text as a sentence refusing it writes it, so that a blank or a control
 * character in it shows. Header-only: scrun, which links no library, writes it so too. */
#ifndef SC_CORE_ENV_TEXT_H
#define SC_CORE_ENV_TEXT_H

#include <stddef.h>
#include <stdio.h>

/* Room for a text shown quoted: longer ones are cut, ending "...'". */
#define SC_ENV_TEXT_MAX 256

/* s itself when it holds only visible characters; else s in single quotes in buf (len
 * bytes, at least 16), tabs, line ends and other control characters written as \t, \n,
 * \r and \xHH, and the text cut where it does not fit. A blank that a script left at
 * the end ("SC_ALGO=ring ") made the sentence read "SC_ALGO=ring  is not one of auto,
 * ring, rd"; it reads "SC_ALGO='ring ' is not one of ...". */
static inline const char *sc_env_text(const char *s, char *buf, size_t len)
{
    size_t n = 1;
    const char *c;

    for (c = s; *c; c++)
        if ((unsigned char)*c <= ' ' || *c == 0x7f)
            break;
    if (!*c)
        return s;
    buf[0] = '\'';
    for (c = s; *c && n + 8 < len; c++) {
        unsigned char u = (unsigned char)*c;
        if (u == '\t' || u == '\n' || u == '\r')
            n += (size_t)snprintf(buf + n, len - n, "\\%c", u == '\t' ? 't' : u == '\n' ? 'n'
                                                                                    : 'r');
        else if (u < ' ' || u == 0x7f)
            n += (size_t)snprintf(buf + n, len - n, "\\x%02x", u);
        else
            buf[n++] = (char)u;
    }
    snprintf(buf + n, len - n, "%s'", *c ? "..." : "");
    return buf;
}

#endif
