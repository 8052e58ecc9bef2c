"""A bot-builder's kit: PettingZoo AEC environments of 砸六家 and 拖拉机 over the rules cores (`paiju.envs.aec`).

    from paiju.envs import zlj_env, tractor_v2
    env = zlj_env()               # one deal per episode; agents "seat_0" … "seat_5" (tractor_v2: … "seat_3")
    env.reset(seed=7)
    for agent in env.agent_iter():
        observation, reward, termination, truncation, info = env.last()
        action = None if termination or truncation else choose(observation, info)   # a legal index
        env.step(action)

docs/bots.md documents the spaces, the rewards and how a trained agent plays real tables.
"""

from paiju.envs.aec import MAX_ACTIONS, CardGameEnv, tractor_env, zlj_env
from paiju.envs.tractor_v2 import TractorV2Env, tractor_v2

__all__ = ["MAX_ACTIONS", "CardGameEnv", "TractorV2Env", "tractor_env", "tractor_v2", "zlj_env"]
