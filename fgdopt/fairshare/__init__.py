"""Fair shares of cluster-wide GPU time between users (Gandiva-Fair, Chaudhary et al., EuroSys'20).

=======================================  ===================================================================
:mod:`fgdopt.fairshare.shares`           tickets, max-min fair shares by tickets under demands (water filling),
                                         Jain's index
:mod:`fgdopt.fairshare.stride`           gang-aware stride scheduling of one group of GPUs (a server, or the
                                         central partition of a GPU type)
:mod:`fgdopt.fairshare.trading`          trading of fast-GPU share for slow-GPU share between users by
                                         marginal utility, at a price between their speedups
:mod:`fgdopt.fairshare.scheduler`        :class:`GandivaFair`, the round mechanism of the time engine that
                                         realizes the shares (split stride, load balancing by migration, trading)
=======================================  ===================================================================

The paper has no public code; what is built here follows its text (sections cited in each module) and says where
it chooses.
"""

from fgdopt.fairshare.scheduler import GandivaFair
from fgdopt.fairshare.shares import check_tickets, jain_index, water_fill
from fgdopt.fairshare.stride import gang_stride
from fgdopt.fairshare.trading import Trade, trade_shares

__all__ = ["GandivaFair", "Trade", "check_tickets", "gang_stride", "jain_index", "trade_shares", "water_fill"]
