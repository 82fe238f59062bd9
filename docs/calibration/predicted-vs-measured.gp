set terminal pngcairo size 1200,540 font ',10'
set output 'docs/calibration/predicted-vs-measured.png'
set multiplot layout 1,2 title 'shardplan cost model vs measured H100 serving (log-log; dashed: +-25%)'
set logscale xy
set grid
set key top left
set xlabel 'measured (ms)'
set ylabel 'predicted (ms)'
set title 'TPOT'
plot 'docs/calibration/predicted-vs-measured.dat' index 0 using 1:2 with points pt 7 ps 0.5 lc rgb '#9ecae1' title 'fit rows', '' index 1 using 1:2 with points pt 7 ps 0.6 lc rgb '#d62728' title 'held-out', x with lines lc rgb 'black' notitle, 1.25*x with lines dt 2 lc rgb 'gray' notitle, 0.75*x with lines dt 2 lc rgb 'gray' notitle
set title 'TTFT'
plot 'docs/calibration/predicted-vs-measured.dat' index 2 using 1:2 with points pt 7 ps 0.5 lc rgb '#9ecae1' title 'fit rows', '' index 3 using 1:2 with points pt 7 ps 0.6 lc rgb '#d62728' title 'held-out', x with lines lc rgb 'black' notitle, 1.25*x with lines dt 2 lc rgb 'gray' notitle, 0.75*x with lines dt 2 lc rgb 'gray' notitle
unset multiplot
