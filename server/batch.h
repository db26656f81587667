/*
 * batch.h - atomic batches (docs/PROTOCOL.md): the binary protocol's batch
 * frame (opcode 0xFF01, docs/PROTOCOL.md 2.12) and MULTI/EXEC/DISCARD on the
 * text protocol (3.5). Both come down to one batch body (frame.h: a list of
 * sub-requests, each an opcode and its arguments) run by one call:
 *
 *   - checked whole first: an unknown opcode, a wrong argument count, an op
 *     that may not be batched (OPF_NOBATCH), a session that must AUTH
 *     first, or a write while the journal cannot be written refuse the
 *     whole batch, and nothing runs;
 *   - then every sub-request runs through exec_op, one after the other.
 *     The server is one thread and the call does no I/O, so no other
 *     client's request can run in between: a reader sees all of a batch
 *     or none of it;
 *   - a sub-request that fails at run time (a bad argument, a limit)
 *     answers its error in its place and does not undo the others, as in
 *     Redis;
 *   - the journal records the batch as one record (persist_batch_begin),
 *     so replay after a crash applies all of it or, when the record is
 *     torn, none.
 *
 * The reply is one array with one element per sub-request: its reply, or
 * its error as an error element. A refused batch answers one error
 * instead, naming the sub-request ("batch op 2: ...", counting from 0).
 */
#ifndef UR_BATCH_H
#define UR_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "exec.h"
#include "frame.h"

/*
 * Runs the batch frame req (parsed by ur_frame_parse_request: op
 * UR_FRAME_OP_BATCH) and writes its reply to r; req->argv is scratch for
 * one sub-request's arguments and holds at least req->sub_argc_max.
 * Returns how many sub-requests answered an error (0 also when the batch
 * was refused as a whole: r->status then says so).
 */
uint32_t batch_exec(struct server *srv, struct session *sess,
                    const struct ur_frame_req *req, struct reply *r);

/*
 * MULTI on a text session. The queued commands are copied into a batch
 * body (their arguments point into the connection's input buffer, which is
 * consumed), at most min(max-args, 65535) commands and max-frame bytes.
 */

/* MULTI: opens sess's transaction. 0, or -1 (out of memory). */
int batch_multi_begin(struct session *sess);

/*
 * While sess is in MULTI, takes a command instead of the executor: checks
 * it (arity, OPF_NOBATCH, the queue's limits) and answers +QUEUED or the
 * refusal, which fails the transaction; returns true. Returns false for
 * the commands that run at once even in MULTI: MULTI (nested: an error),
 * EXEC, DISCARD, QUIT and RESET (which ends it).
 */
bool batch_multi_queue(struct server *srv, struct session *sess,
                       const struct ur_op *op, uint32_t argc,
                       const struct ur_arg *argv, struct reply *r);

/* A command was refused before it reached batch_multi_queue (an unknown
 * name): EXEC will answer EXECABORT. No-op outside MULTI. */
void batch_multi_fail(struct session *sess);

/* EXEC: runs the queued commands as one batch (or answers EXECABORT when
 * one was refused) and ends the transaction. */
void batch_multi_exec(struct server *srv, struct session *sess,
                      struct reply *r);

/* DISCARD, or the connection closed: drops the transaction, if any. */
void batch_multi_end(struct session *sess);

#endif
