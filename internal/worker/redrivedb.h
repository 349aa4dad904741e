/* redrivedb.h - what the automatic redrive (redrive.c) asks of the
 * archive: its candidates, its circuits, the cases it leaves to humans.
 * Implemented by the backend (sqlite/redrivedb.c). */
#ifndef DLQ_REDRIVEDB_H
#define DLQ_REDRIVEDB_H

#include <stdbool.h>
#include <stdint.h>

struct dlq_archive;

/* Whether the redrive of `queue` is paused by its circuit; true also
 * when the archive cannot say (then nothing is redriven). */
bool	dlq_redrive_circuit_open(struct dlq_archive *, const char *queue);
/* Records the redrive published since `since_ms` that died again by
 * `until_ms`. */
int64_t	dlq_redrive_returned(struct dlq_archive *, const char *queue,
	    int64_t since_ms, int64_t until_ms);
/* Opens the circuit of `queue` (under the writer mutex). */
void	dlq_redrive_trip(struct dlq_archive *, const char *queue,
	    int64_t now_ms, int64_t redriven, int64_t returned);

/* Each case left to humans: its id, message id (NULL: none) and the
 * note stored with it. */
typedef void (*dlq_redrive_left_fn)(void *arg, int64_t id,
	    const char *message_id, const char *note);

/* Leaves to humans the open cases of `queue` whose class is in
 * `classes_json` (a JSON array) that died `max_cycles` times or more,
 * noting why; calls `each` for each (under the writer mutex). */
void	dlq_redrive_give_up(struct dlq_archive *, const char *queue,
	    int64_t now_ms, int64_t max_cycles, const char *classes_json,
	    dlq_redrive_left_fn each, void *arg);
/* Leaves case `id` to humans with `note` (the replay policy refused it);
 * calls `each` once when it did. */
void	dlq_redrive_leave(struct dlq_archive *, int64_t id, int64_t now_ms,
	    const char *note, dlq_redrive_left_fn each, void *arg);

/* Calls `each` with the ids of the oldest open cases of `queue` that
 * died at or before `born_before_ms`, fewer than `max_cycles` times,
 * whose class is in `classes_json`, not purged, not left to humans; at
 * most `limit`, the oldest first. 0 / -1 */
int	dlq_redrive_candidates(struct dlq_archive *, const char *queue,
	    int64_t born_before_ms, int64_t max_cycles,
	    const char *classes_json, int64_t limit,
	    void (*each)(void *arg, int64_t id), void *arg);

#endif
