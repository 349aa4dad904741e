/* stopsig.h - ^C, a closed terminal or a kill (SIGINT, SIGHUP, SIGTERM)
 * asking a dlqctl command to stop where it can. The command checks
 * dlq_stop_asked() between its steps, finishes the one under way and
 * says what it did and what it left. */
#ifndef DLQ_STOPSIG_H
#define DLQ_STOPSIG_H

#include <stdbool.h>

/* Catches the three signals from now on. `second_kills`: the first one
 * only is caught, a second ends the process as it would have. */
void	dlq_stop_catch(bool second_kills);

/* Whether one of them came since dlq_stop_catch(). */
bool	dlq_stop_asked(void);

#endif
