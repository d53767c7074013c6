"""The ppo_pact loop's training stages: warm-start the actor and build its critic, then
train both chunk by chunk (PPO or PACT critic, `tasks.loops.ppo_pact.actor_critic`). Evaluation and
registration of the actor are `tasks.training.stages`'s stages. Each stage is idempotent: it
publishes deterministic parts keyed by what it did (init, chunk c) and returns the
stored result when its last part exists, so a resumed run continues from the last
published chunk.

Each chunk publishes two candidates: the actor (a `tasks.training.policy.save_checkpoint` blob,
operator = the critic kind) and the critic (a `tasks.loops.ppo_pact.actor_critic.save_critic` blob,
operator "critic"); the actor is what is evaluated and registered."""

from __future__ import annotations

from prefect import task

from tasks.loops.ppo_pact.actor_critic import Learner, actor_critic_step, load_critic, make_critic, save_critic
from tasks.runtime.context import RunRef, run_config, store_for
from tasks.runtime.failpoints import crash_point
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.training.placement import run_chunk
from tasks.training.policy import device, load_checkpoint, save_checkpoint
from tasks.training.stages import arith, chunk_key, policy_row, registry_row, step_row, warm_start

CRITIC = "critic"


def actor_and_critic(rows) -> tuple[str, str]:
    """(actor id, critic id) of a published pair of candidate rows."""
    by_role = {CRITIC if r.operator == CRITIC else "actor": r.candidate_id for r in rows}
    return by_role["actor"], by_role[CRITIC]


@task(name="init-actor-critic", **STAGE_OPTIONS)
def init_actor_critic(ref: RunRef) -> tuple[str, str]:
    """The actor is the store's shared warm start of the run's seed (`tasks.training.stages.warm_start`);
    the critic is built on a copy of its trunk; publish both (the actor at registry stage experimental) -> (actor id,
    critic id) (idempotent)."""
    store = store_for(ref.store_uri)
    if store.has_part("candidates", ref.run_id, "init", "actor-critic"):
        return actor_and_critic(store.read_part("candidates", ref.run_id, "init", "actor-critic"))
    config = run_config(ref)
    cfg = config.ppo_pact
    actor_id = warm_start(ref, cfg.categories, cfg.pretrain_steps)
    actor, _, _ = load_checkpoint(store.get_blob(actor_id), cfg.lr, device())
    critic_id = store.put_blob(save_critic(make_critic(actor), None, 0))
    store.write_part("registry", ref.run_id, "register", "init",
                     [registry_row(ref, 1, actor_id, "experimental", None, None, None)])
    rows = [policy_row(ref, actor_id, 0, [], "sft", f"supervised warm start, {cfg.pretrain_steps} steps"),
            policy_row(ref, critic_id, 0, [actor_id], CRITIC, f"{cfg.critic} critic on the warm start's trunk, zero head")]
    store.write_part("candidates", ref.run_id, "init", "actor-critic", rows)
    return actor_id, critic_id


@task(name="train-actor-critic", **STAGE_OPTIONS)
def train_actor_critic(ref: RunRef, chunk: int, first_step: int, n_steps: int, actor_id: str,
                       critic_id: str) -> tuple[str, str]:
    """`n_steps` actor-critic steps from the pair (actor_id, critic_id), on the run's GPU
    worker when it has a cluster (`tasks.training.placement.run_chunk`) -> (actor id, critic id)."""
    return run_chunk(ref, "train", chunk, first_step, n_steps, actor_critic_chunk, actor_id, critic_id)


def actor_critic_chunk(ref: RunRef, chunk: int, first_step: int, n_steps: int, actor_id: str,
                       critic_id: str) -> tuple[tuple[str, str], str | None]:
    """`train_actor_critic`'s work: publishes both checkpoints as candidates and one
    train_steps row per step (keyed by the new actor) -> ((actor id, critic id), progress
    status) (idempotent: a published chunk is read back, not retrained, and has no status)."""
    store, key = store_for(ref.store_uri), chunk_key(chunk)
    if store.has_part("train_steps", ref.run_id, "train", key):
        return actor_and_critic(store.read_part("candidates", ref.run_id, "train", key)), None
    config, suite = run_config(ref), arith(ref)
    cfg = config.ppo_pact
    actor, actor_optimizer, done = load_checkpoint(store.get_blob(actor_id), cfg.lr, device())
    critic, critic_optimizer, critic_done = load_critic(store.get_blob(critic_id), cfg.critic_lr, device())
    if done != first_step or critic_done != first_step:
        raise RuntimeError(f"actor {actor_id[:12]} has {done} steps and critic {critic_id[:12]} {critic_done}, "
                           f"but chunk {chunk} starts at step {first_step}")
    learner, train = Learner(actor, actor_optimizer, critic, critic_optimizer), suite.cases("train")
    results = [actor_critic_step(learner, suite, train, cfg, config.seed, s)
               for s in range(first_step, first_step + n_steps)]
    crash_point("train", chunk)
    last = first_step + n_steps
    new_actor = store.put_blob(save_checkpoint(actor.cpu(), actor_optimizer, last))
    new_critic = store.put_blob(save_critic(critic.cpu(), critic_optimizer, last))
    span = f"steps {first_step}..{last - 1}"
    store.write_part("candidates", ref.run_id, "train", key, [
        policy_row(ref, new_actor, chunk + 1, [actor_id, critic_id], cfg.critic, f"{cfg.critic} actor {span}"),
        policy_row(ref, new_critic, chunk + 1, [critic_id, new_actor], CRITIC, f"{cfg.critic} critic {span}"),
    ])
    store.write_part("train_steps", ref.run_id, "train", key,
                     [step_row(ref, new_actor, first_step + i, r) for i, r in enumerate(results)])
    return (new_actor, new_critic), f"step {last}, reward {results[-1].metrics['reward_mean']:.2f}"
