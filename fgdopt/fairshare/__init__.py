"""Fair shares of cluster-wide GPU time between users (Gandiva-Fair, Chaudhary et al., EuroSys'20).

=======================================  ===================================================================
:mod:`fgdopt.fairshare.shares`           tickets, max-min fair shares by tickets under demands (water filling),
                                         Jain's index
:mod:`fgdopt.fairshare.stride`           gang-aware stride scheduling of one group of GPUs (a server, or the
                                         central partition of a GPU type)
:mod:`fgdopt.fairshare.trading`          trading of fast-GPU share for slow-GPU share between users by
                                         marginal utility, at a price between their speedups
:mod:`fgdopt.fairshare.scheduler`        :class:`GandivaFair`, the round policy of the engine's round loop that
                                         realizes the shares (split stride, load balancing by migration, trading)
=======================================  ===================================================================

The paper has no public code; what is built here follows its design as described in the paper and says where it
chooses. Only the paper's abstract could be read while this was written (the stored copy holds no more), so the
section numbers cited in these modules (3: fair share by tickets; 4.1: split, gang-aware stride scheduling; 4.2:
load balancing by migration; 5: trading by marginal utility) are from memory of the paper and should be checked
against it; so should the price point (here the middle of the two speedups, an option).
"""

from fgdopt.fairshare.scheduler import GandivaFair
from fgdopt.fairshare.shares import check_tickets, jain_index, water_fill
from fgdopt.fairshare.stride import gang_stride
from fgdopt.fairshare.trading import Trade, trade_shares

__all__ = ["GandivaFair", "Trade", "check_tickets", "gang_stride", "jain_index", "trade_shares", "water_fill"]
