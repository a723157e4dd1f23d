// The column sorts of the 3-D rank filters' shared road (rank3d.hpp's Rank3dPlan) for the 5 x 5
// and 3 x 3 columns of the 5x5x5 and 3x3x3 boxes, and the 3x3x3 median's merge, as compile-time
// tables so that a vector of each wire stays in a register through the whole network
// (rank3d_impl.cpp): Rank3dPlan::sort for 25 and 9 wires and Rank3dPlan::merge and kept for 9
// rows, 3 columns and rank 13, written out. The row uses a table only where it equals the plan's,
// so the samples land on the wires the plan says.
#pragma once

namespace ooc::kernels {

// 25 wires: 140 exchanges
inline constexpr unsigned char kSort25[140][2] = {
    {0, 1},   {2, 3},   {4, 5},   {6, 7},   {8, 9},   {10, 11}, {12, 13}, {14, 15}, {16, 17},
    {18, 19}, {20, 21}, {22, 23}, {0, 2},   {1, 3},   {4, 6},   {5, 7},   {8, 10},  {9, 11},
    {12, 14}, {13, 15}, {16, 18}, {17, 19}, {20, 22}, {21, 23}, {1, 2},   {5, 6},   {9, 10},
    {13, 14}, {17, 18}, {21, 22}, {0, 4},   {1, 5},   {2, 6},   {3, 7},   {8, 12},  {9, 13},
    {10, 14}, {11, 15}, {16, 20}, {17, 21}, {18, 22}, {19, 23}, {2, 4},   {3, 5},   {10, 12},
    {11, 13}, {18, 20}, {19, 21}, {1, 2},   {3, 4},   {5, 6},   {9, 10},  {11, 12}, {13, 14},
    {17, 18}, {19, 20}, {21, 22}, {0, 8},   {1, 9},   {2, 10},  {3, 11},  {4, 12},  {5, 13},
    {6, 14},  {7, 15},  {16, 24}, {4, 8},   {5, 9},   {6, 10},  {7, 11},  {20, 24}, {2, 4},
    {3, 5},   {6, 8},   {7, 9},   {10, 12}, {11, 13}, {18, 20}, {19, 21}, {22, 24}, {1, 2},
    {3, 4},   {5, 6},   {7, 8},   {9, 10},  {11, 12}, {13, 14}, {17, 18}, {19, 20}, {21, 22},
    {23, 24}, {0, 16},  {1, 17},  {2, 18},  {3, 19},  {4, 20},  {5, 21},  {6, 22},  {7, 23},
    {8, 24},  {8, 16},  {9, 17},  {10, 18}, {11, 19}, {12, 20}, {13, 21}, {14, 22}, {15, 23},
    {4, 8},   {5, 9},   {6, 10},  {7, 11},  {12, 16}, {13, 17}, {14, 18}, {15, 19}, {20, 24},
    {2, 4},   {3, 5},   {6, 8},   {7, 9},   {10, 12}, {11, 13}, {14, 16}, {15, 17}, {18, 20},
    {19, 21}, {22, 24}, {1, 2},   {3, 4},   {5, 6},   {7, 8},   {9, 10},  {11, 12}, {13, 14},
    {15, 16}, {17, 18}, {19, 20}, {21, 22}, {23, 24},
};
inline constexpr unsigned char kSorted25[25] = {
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
};
// 9 wires: 28 exchanges
inline constexpr unsigned char kSort9[28][2] = {
    {0, 1}, {2, 3}, {4, 5}, {6, 7}, {0, 2}, {1, 3}, {4, 6}, {5, 7}, {1, 2}, {5, 6},
    {0, 4}, {1, 5}, {2, 6}, {3, 7}, {2, 4}, {3, 5}, {1, 2}, {3, 4}, {5, 6}, {0, 8},
    {4, 8}, {2, 4}, {3, 5}, {6, 8}, {1, 2}, {3, 4}, {5, 6}, {7, 8},
};
inline constexpr unsigned char kSorted9[9] = {
    0, 1, 2, 3, 4, 5, 6, 7, 8,
};

// The 3x3x3 median's merge of its two common sorted columns (wires 0-8 and 9-17): 28 exchanges,
// and the wires of the merged ranks 4..13 that the two-list selection reads.
inline constexpr unsigned char kMerge9x2Median[28][2] = {
    {0, 9},   {1, 10}, {2, 11}, {3, 12}, {4, 13}, {5, 14},  {6, 15},  {7, 16},  {8, 17}, {8, 9},
    {4, 8},   {5, 10}, {6, 11}, {7, 12}, {13, 9}, {2, 4},   {3, 5},   {6, 8},   {7, 10}, {11, 13},
    {12, 14}, {15, 9}, {3, 4},  {5, 6},  {7, 8},  {10, 11}, {12, 13}, {14, 15},
};
inline constexpr unsigned char kKept9x2Median[10] = {4, 5, 6, 7, 8, 10, 11, 12, 13, 14};

}  // namespace ooc::kernels
