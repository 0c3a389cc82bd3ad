process.stdin.once('data', d => { process.stdout.write(JSON.stringify({operation:'notify', arguments:{}})+'\n'); });
