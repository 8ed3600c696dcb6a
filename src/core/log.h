/* Logging to stderr with a rank prefix; the level comes from SC_LOG_LEVEL. */
#ifndef SC_CORE_LOG_H
#define SC_CORE_LOG_H

typedef enum {
    SC_LOG_ERROR = 0,
    SC_LOG_WARN,
    SC_LOG_INFO,
    SC_LOG_DEBUG,
    SC_LOG_TRACE
} sc_log_level_t;

/* The rank shown in the prefix of every line and error; -1 until known. */
void sc_log_set_rank(int rank);
int sc_log_rank(void);

/* The level in force: SC_LOG_LEVEL (error|warn|info|debug|trace or 0-4), default warn. */
sc_log_level_t sc_log_level(void);

void sc_log_write(sc_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define sc_log(level, ...)                                                           \
    do {                                                                             \
        if ((level) <= sc_log_level())                                               \
            sc_log_write((level), __VA_ARGS__);                                      \
    } while (0)

#endif
